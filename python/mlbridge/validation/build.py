"""One way to build a program: what a differential check compares."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from mlbridge.errors import CodecError
from mlbridge.llvm.versions import LlvmTools, tools
from mlbridge.run_stats import RunTotals, read_run_stats

__all__ = ["LEVELS", "Build", "policy_decisions", "reference_build"]

#: The optimisation levels a reference build may have.
LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz")


@dataclass(frozen=True)
class Build:
    """A compiler's command before a program's flags and sources (it
    compiles and links them into one executable), and what its environment
    adds (a plugin's settings)."""

    #: How reports name it (``-O0``, ``inlining policy.onnx``).
    name: str
    command: Tuple[str, ...]
    env: Dict[str, str] = field(default_factory=dict)
    #: The variable that has a deployed policy's plugin append its
    #: statistics records (docs/run-stats.md) to a file, so that the check
    #: knows the policy decided and never fell back; None: no policy.
    stats_variable: Optional[str] = None
    #: The C++ driver of the same compiler, for projects that have C++
    #: (None: ``command[0]`` compiles C only).
    cxx: Optional[str] = None
    #: Files and directories the compiler reads besides its own install
    #: (a plugin's directory, a policy): a sandboxed build sees them.
    reads: Tuple[Path, ...] = ()
    #: A program the compiler runs under, with its arguments before the
    #: compiler's command (``mlbridge-interactive-host ... --``; empty: none).
    launcher: Tuple[str, ...] = ()

    def at_level(self, other: "Build") -> "Build":
        """This build with ``other``'s optimisation level instead of its own
        (both compile at the same level; they differ in their other flags)."""
        level = [a for a in other.command[1:] if a in LEVELS]
        own = [a for a in self.command[1:] if a in LEVELS]
        rest = [a for a in self.command[1:] if a not in LEVELS]
        name = self.name
        if len(level) == 1 and len(own) == 1:  # the name says the level it builds at
            name = name.replace(own[0], level[0])
        return replace(self, name=name, command=(self.command[0], *level, *rest))

    def argv(self, flags: Sequence[str], sources: Sequence[str], output: str) -> List[str]:
        """The command that builds ``sources`` into the executable ``output``."""
        return [*self.launcher, *self.command, "-w", *flags, *sources, "-o", output]


def reference_build(level: str = "-O0", llvm: Optional[LlvmTools] = None) -> Build:
    """The reference a candidate is compared with: the clang of ``llvm``
    (default: the newest installed) at ``level``, no plugin."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {' '.join(LEVELS)}, got {level!r}")
    llvm = llvm or tools()
    return Build(f"{llvm.clang} {level}", (llvm.clang, level), cxx=llvm.clangxx)


def flags_build(
    flags: Sequence[str], level: str = "-Oz", llvm: Optional[LlvmTools] = None
) -> Build:
    """A constant configuration as a candidate: the clang of ``llvm`` at
    ``level`` with ``flags`` after it (``-mllvm -inline-threshold=10 -Xclang
    -fmerge-functions``, the best constant of docs/phase-ordering.md), no
    policy."""
    if not flags or any(not f or "\0" in f for f in flags):
        raise ValueError(f"flags must be non-empty words, got {list(flags)!r}")
    plain = reference_build(level, llvm)
    return replace(plain, name=" ".join([plain.name, *flags]), command=(*plain.command, *flags))


def policy_decisions(stats: Path, max_bytes: int) -> Tuple[Optional[str], int]:
    """What a deployed policy's statistics file ``stats`` (at most
    ``max_bytes``) says: (what is wrong, or None when the policy decided
    every decision asked of it; its decisions)."""
    try:
        totals = RunTotals.of(read_run_stats(stats, max_bytes))
    except CodecError as err:
        return f"unreadable statistics: {err}", 0
    if totals.units == 0:
        return "the plugin wrote no statistics (was the policy loaded?)", 0
    if totals.fallbacks:
        error = totals.first_error or "no error given"
        return f"{totals.fallbacks} of {totals.decisions} decisions fell back: {error}", 0
    return None, totals.decisions

"""One way to build a program: what a differential check compares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from mlbridge.llvm.versions import LlvmTools, tools

__all__ = ["LEVELS", "Build", "reference_build"]

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

    def argv(self, flags: Sequence[str], sources: Sequence[str], output: str) -> List[str]:
        """The command that builds ``sources`` into the executable ``output``."""
        return [*self.command, "-w", *flags, *sources, "-o", output]


def reference_build(level: str = "-O0", llvm: Optional[LlvmTools] = None) -> Build:
    """The reference a candidate is compared with: the clang of ``llvm``
    (default: the newest installed) at ``level``, no plugin."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {' '.join(LEVELS)}, got {level!r}")
    clang = (llvm or tools()).clang
    return Build(f"{clang} {level}", (clang, level))

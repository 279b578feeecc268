"""Measuring compilation outcomes (LLVM sends no reward in interactive mode)."""

from __future__ import annotations

import re
import subprocess
from typing import Dict, Tuple

from mlbridge import child_process
from mlbridge.errors import MlbridgeError

_CALL = re.compile(
    r"^\s*(?:%[-\w.$]+\s*=\s*)?(?:(?:tail|musttail|notail)\s+)?"
    r"(?:call|invoke)\b[^\n]*?@([-\w.$]+)\(",
    re.MULTILINE,
)
_SPILL = re.compile(r"[#;@/].*\b(?:Folded )?Spill\b")
_RELOAD = re.compile(r"[#;@/].*\b(?:Folded )?Reload\b")


class OutcomeError(MlbridgeError):
    """An outcome could not be measured."""


def section_sizes(path: str, tool: str = "llvm-size-19") -> Dict[str, int]:
    """Section name -> size in bytes of the object file ``path`` (``llvm-size -A``)."""
    done = child_process.run(
        [tool, "-A", path], stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise OutcomeError(f"{tool} -A {path} failed: {done.stderr.strip()}")
    sizes: Dict[str, int] = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = sizes.get(parts[0], 0) + int(parts[1])
    return sizes


def text_size(path: str, tool: str = "llvm-size-19") -> int:
    """Bytes of code: ``.text`` plus any ``.text.*`` sections (-ffunction-sections)."""
    return sum(
        size
        for name, size in section_sizes(path, tool).items()
        if name == ".text" or name.startswith(".text.")
    )


def spill_counts(asm: str) -> Tuple[int, int]:
    """(spills, reloads) in llc's assembly text: its ``# 8-byte Spill`` /
    ``# 8-byte Reload`` (and ``Folded``) comments, one per instruction."""
    spills = reloads = 0
    for line in asm.splitlines():
        if _SPILL.search(line):
            spills += 1
        elif _RELOAD.search(line):
            reloads += 1
    return spills, reloads


def call_count(ir: str, include_intrinsics: bool = False) -> int:
    """Direct ``call``/``invoke`` instructions in textual LLVM IR.

    Calls to ``llvm.*`` intrinsics are left out unless ``include_intrinsics``;
    indirect calls (through a register) are not counted.
    """
    return sum(
        1 for m in _CALL.finditer(ir) if include_intrinsics or not m.group(1).startswith("llvm.")
    )

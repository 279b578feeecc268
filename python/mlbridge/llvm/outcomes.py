"""Measuring compilation outcomes (LLVM sends no reward in interactive mode)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Dict, Iterable, Tuple

from mlbridge import child_process
from mlbridge.errors import MlbridgeError

_CALL = re.compile(
    r"^\s*(?:%[-\w.$]+\s*=\s*)?(?:(?:tail|musttail|notail)\s+)?"
    r"(?:call|invoke)\b[^\n]*?@([-\w.$]+)\(",
    re.MULTILINE,
)
_GROUP = re.compile(r"^COMDAT group section \[\s*\d+\] \S+ \[(.*)\] contains \d+ sections:$")
_MEMBER = re.compile(r"^\s+\[\s*(\d+)\]\s+(\S+)$")
_SECTION = re.compile(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+(.*)$")
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


def _is_code(name: str) -> bool:
    """Whether section ``name`` holds code: ``.text`` or ``.text.*``."""
    return name == ".text" or name.startswith(".text.")


def text_size(path: str, tool: str = "llvm-size-19") -> int:
    """Bytes of code: ``.text`` plus any ``.text.*`` sections (-ffunction-sections)."""
    return sum(size for name, size in section_sizes(path, tool).items() if _is_code(name))


@dataclass(frozen=True)
class CodeBytes:
    """An object's code (as :func:`text_size` counts it): the bytes outside
    any COMDAT group, and the bytes of each COMDAT group by its signature."""

    own: int
    comdat: Dict[str, int]

    @property
    def total(self) -> int:
        """All of it, as in the object (:func:`text_size`)."""
        return self.own + sum(self.comdat.values())


def code_bytes(path: str, tool: str = "llvm-readelf-19") -> CodeBytes:
    """The code of the object file ``path`` split by COMDAT group
    (``llvm-readelf -W --section-headers --section-groups``)."""
    done = child_process.run(
        [tool, "-W", "--section-headers", "--section-groups", path],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise OutcomeError(f"{tool} --section-groups {path} failed: {done.stderr.strip()}")
    sizes: Dict[int, int] = {}
    group_of: Dict[int, str] = {}
    signature = None
    for line in done.stdout.splitlines():
        header = _GROUP.match(line)
        if header:
            signature = header.group(1)
            continue
        member = _MEMBER.match(line)
        if member and signature is not None:
            group_of[int(member.group(1))] = signature
            continue
        if not line.strip():
            signature = None
        section = _SECTION.match(line)
        if section and signature is None:
            # Type, address, offset, size, ...: the size is the fourth field.
            fields = section.group(3).split()
            if len(fields) >= 4 and _is_code(section.group(2)):
                try:
                    sizes[int(section.group(1))] = int(fields[3], 16)
                except ValueError:
                    raise OutcomeError(f"{tool}: unexpected section line {line!r}") from None
    own = 0
    comdat: Dict[str, int] = {}
    for index, size in sizes.items():
        if index in group_of:
            comdat[group_of[index]] = comdat.get(group_of[index], 0) + size
        else:
            own += size
    return CodeBytes(own, comdat)


def linked_code(objects: Iterable[CodeBytes]) -> int:
    """The code of ``objects`` linked into one program, as the linker keeps
    it: each object's own code, and each COMDAT group once (the largest copy:
    copies of one group differ only where the objects were compiled
    differently)."""
    own = 0
    groups: Dict[str, int] = {}
    for code in objects:
        own += code.own
        for signature, size in code.comdat.items():
            groups[signature] = max(size, groups.get(signature, 0))
    return own + sum(groups.values())


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

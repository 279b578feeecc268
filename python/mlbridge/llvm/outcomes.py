"""Measuring compilation outcomes (LLVM sends no reward in interactive mode)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, Tuple

from mlbridge.errors import MlbridgeError
from mlbridge.llvm.elf import SHF_ALLOC, SHF_EXECINSTR, ElfError, ElfObject, Section, read_elf

_CALL = re.compile(
    r"^\s*(?:%[-\w.$]+\s*=\s*)?(?:(?:tail|musttail|notail)\s+)?"
    r"(?:call|invoke)\b[^\n]*?@([-\w.$]+)\(",
    re.MULTILINE,
)
_SPILL = re.compile(r"[#;@/].*\b(?:Folded )?Spill\b")
_RELOAD = re.compile(r"[#;@/].*\b(?:Folded )?Reload\b")


#: The sizes of an object a reward or a report may count: ``allocated``
#: (every section that occupies the loaded image) and ``text`` (code alone).
SIZE_METRICS = ("allocated", "text")


class OutcomeError(MlbridgeError):
    """An outcome could not be measured."""


def _object(path: str) -> ElfObject:
    try:
        return read_elf(path)
    except ElfError as err:
        raise OutcomeError(str(err)) from None


def section_sizes(path: str) -> Dict[str, int]:
    """Section name -> size in bytes of the object file ``path`` (sections of
    one name summed), read from its section headers (:mod:`mlbridge.llvm.elf`),
    never from a tool's text, which a section name could forge
    (docs/security.md)."""
    sizes: Dict[str, int] = {}
    for section in _object(path).sections:
        if section.name:
            sizes[section.name] = sizes.get(section.name, 0) + section.size
    return sizes


def _is_code(section: Section) -> bool:
    """Whether ``section`` holds code: its flags say so (``SHF_EXECINSTR``).
    For clang's objects these are ``.text`` and ``.text.*``; a module naming
    a function's section otherwise cannot take its code out of the count."""
    return bool(section.flags & SHF_EXECINSTR)


def text_size(path: str) -> int:
    """Bytes of code: ``.text`` plus any ``.text.*`` sections (-ffunction-sections),
    any code section whatever its name, from the section headers."""
    return object_sizes(path)["text"]


def allocated_bytes(path: str) -> int:
    """Bytes the object's sections occupy in the loaded program: every
    section with ``SHF_ALLOC`` (code, read-only and writable data, unwind
    tables, ``.bss``), from the section headers."""
    return object_sizes(path)["allocated"]


def object_sizes(path: str) -> Dict[str, int]:
    """Both of an object file's sizes from one read of its headers:
    ``allocated`` (:func:`allocated_bytes`) and ``text`` (:func:`text_size`)."""
    return elf_sizes(_object(path))


def elf_sizes(elf: ElfObject) -> Dict[str, int]:
    """An ELF file's ``allocated`` bytes (as :func:`allocated_bytes`) and
    ``text`` bytes (as :func:`text_size`), from headers already read."""
    return {
        "allocated": sum(s.size for s in elf.sections if s.flags & SHF_ALLOC),
        "text": sum(s.size for s in elf.sections if _is_code(s)),
    }


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


def code_bytes(path: str) -> CodeBytes:
    """The code of the object file ``path`` split by COMDAT group: the
    section headers and the ``SHT_GROUP`` sections, a group's signature (its
    symbol's name) only a key."""
    elf = _object(path)
    own = 0
    comdat: Dict[str, int] = {}
    for section in elf.sections:
        if not _is_code(section):
            continue
        signature = elf.comdat_of.get(section.index)
        if signature is None:
            own += section.size
        else:
            comdat[signature] = comdat.get(signature, 0) + section.size
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

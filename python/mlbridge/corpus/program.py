"""What a corpus is made of: programs, each in a split."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Tuple
from urllib.parse import quote

TRAIN = "train"
#: Programs that choose when to stop training (and other tuning), never trained on.
VALIDATION = "validation"
HELD_OUT = "held-out"
#: Inputs clang-19 compiles as LLVM IR (bitcode, text).
BITCODE_SUFFIXES = (".bc", ".ll")


def project_of(program: str) -> str:
    """The project of the program named ``program``: its name up to the
    first ``/`` (a built corpus names programs ``PROJECT/PATH``)."""
    return program.split("/", 1)[0]


@dataclass(frozen=True)
class Program:
    """Translation units compiled and measured together: C (or C++) sources,
    or LLVM bitcode/IR files, each compiled to one object with ``flags``."""

    name: str
    sources: Tuple[Path, ...]
    flags: Tuple[str, ...]
    split: str

    @property
    def lines(self) -> int:
        """Lines of the text sources (bitcode counts none)."""
        return sum(p.read_bytes().count(b"\n") for p in self.sources if p.suffix != ".bc")

    @property
    def project(self) -> str:
        """The project the program belongs to (:func:`project_of` its name)."""
        return project_of(self.name)

    @property
    def dirname(self) -> str:
        """``name`` as one file name (``/`` and other unsafe characters
        percent-encoded): compdb and MLGO names are paths."""
        return quote(self.name, safe="")

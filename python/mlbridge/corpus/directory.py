"""A directory of programs: each top-level ``*.c``, ``*.bc`` or ``*.ll`` file
is one program; each subdirectory holding such files is one program made of
them (compiled with ``-I`` of the subdirectory). Hidden entries and deeper
directories are ignored."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

from mlbridge.corpus.program import BITCODE_SUFFIXES, Program
from mlbridge.corpus.split import hash_split
from mlbridge.errors import CorpusError

#: The files of a directory that are compiled.
SUFFIXES = (".c",) + BITCODE_SUFFIXES


def sorted_sources(directory: Path, suffixes: Tuple[str, ...] = (".c",)) -> Tuple[Path, ...]:
    """The files of ``directory`` (not hidden) ending in one of ``suffixes``, sorted."""
    return tuple(
        sorted(
            p
            for p in directory.iterdir()
            if p.suffix in suffixes and p.is_file() and not p.name.startswith(".")
        )
    )


def directory_programs(directory: Path) -> List[Program]:
    """The programs of ``directory``, split by :func:`hash_split`."""
    found: List[Tuple[str, Tuple[Path, ...], Tuple[str, ...]]] = []
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_file() and entry.suffix in SUFFIXES:
            found.append((entry.name, (entry,), ()))
        elif entry.is_dir():
            sources = sorted_sources(entry, SUFFIXES)
            if sources:
                found.append((entry.name, sources, (f"-I{entry}",)))
    if not found:
        raise CorpusError(
            f"no C programs in {directory} (nor .bc/.ll files): put each program's "
            f".c file at its top level, or each program's .c files in a subdirectory"
        )
    splits = hash_split([name for name, _, _ in found])
    return [Program(name, sources, flags, splits[name]) for name, sources, flags in found]

"""Reading a corpus of any supported format, recognised by its layout."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Tuple

from mlbridge.corpus import built, compdb, mlgo
from mlbridge.corpus.directory import directory_programs
from mlbridge.corpus.fetched import fetched_programs, is_fetched_corpus
from mlbridge.corpus.program import Program
from mlbridge.errors import CorpusError

BUILT = "built"
MLGO = "mlgo"
COMPDB = "compile_commands"
FETCHED = "fetched"
DIRECTORY = "directory"


def detect(path: Path) -> Tuple[str, Path]:
    """The format of the corpus at ``path`` and the file or directory read:
    an ``mlbridge_corpus.json`` (``mlbridge corpus build``), a
    ``corpus_description.json`` (MLGO), a ``compile_commands.json`` (each
    given as the file or the directory holding it, in that order),
    tools/fetch_corpus.py's layout, else a directory of programs."""
    path = Path(os.path.abspath(path))
    if path.is_file():
        if path.name == built.NAME:
            return BUILT, path
        if path.name == mlgo.NAME:
            return MLGO, path
        if path.name == compdb.NAME:
            return COMPDB, path
        raise CorpusError(
            f"the corpus {path} is a file, but none of {built.NAME}, {compdb.NAME}, {mlgo.NAME}"
        )
    if not path.is_dir():
        raise CorpusError(f"the corpus {path} does not exist (not a directory nor a file)")
    if (path / built.NAME).is_file():
        return BUILT, path / built.NAME
    if (path / mlgo.NAME).is_file():
        return MLGO, path / mlgo.NAME
    if (path / compdb.NAME).is_file():
        return COMPDB, path / compdb.NAME
    if is_fetched_corpus(path):
        return FETCHED, path
    return DIRECTORY, path


def load_corpus(path: Path, quick: bool = False) -> List[Program]:
    """The programs of the corpus at ``path``, each in its split (see
    :func:`detect` for the formats). ``quick`` keeps only the small programs
    of tools/fetch_corpus.py's corpus and changes no other format."""
    kind, where = detect(path)
    if kind == BUILT:
        return built.built_programs(where)
    if kind == MLGO:
        return mlgo.mlgo_programs(where)
    if kind == COMPDB:
        return compdb.compdb_programs(where)
    if kind == FETCHED:
        return fetched_programs(where, quick)
    return directory_programs(where)

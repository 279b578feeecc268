"""Reading a corpus's files as untrusted input: JSON with a size cap, paths
that must stay inside the corpus."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mlbridge.errors import CorpusError
from mlbridge.input_files import read_regular_file
from mlbridge.jsontext import load_json_value

#: Largest compile_commands.json or corpus_description.json read (LLVM's own
#: compile_commands.json is about 15 MiB).
MAX_JSON_BYTES = 64 << 20
#: Largest MLGO .cmd file read.
MAX_CMD_BYTES = 1 << 20


def read_capped(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, or CorpusError when it is
    missing, not a regular file or larger than ``limit``
    (:func:`mlbridge.input_files.read_regular_file`)."""
    return read_regular_file(path, limit, CorpusError)


def read_json(path: Path) -> Any:
    """The JSON value in ``path`` (at most MAX_JSON_BYTES)."""
    return load_json_value(read_capped(path, MAX_JSON_BYTES), str(path), CorpusError)


def inside(root: Path, relative: str, what: str) -> Path:
    """``root / relative``, refusing a path that is absolute or leaves
    ``root`` (after symbolic links)."""
    if not relative or "\0" in relative or os.path.isabs(relative):
        raise CorpusError(f"{what}: {relative!r} is not a relative path")
    path = root / relative
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        raise CorpusError(f"{what}: {relative!r} leaves the corpus directory {root}")
    return path

"""Temporary outputs a compiler leaves behind when it is stopped.

clang writes its output through a temporary file next to it (``X-1a2b3c4d.o.tmp``
for ``X.o``; some LLVM tools ``X.o.tmp``) and renames it at the end. LLVM
removes it on SIGTERM or SIGINT, but not on SIGKILL (the fallback when a
compiler does not stop). :class:`TempOutputs` records, before a compilation,
which files already exist where the outputs go, and afterwards removes only
the files that appeared during the run *and* match an output's temporary name.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Pattern, Sequence, Set, Tuple

#: Source-like arguments whose output, without ``-o``, goes to the current
#: directory under the same stem (``clang -c f.c`` -> ``f.o``).
_SOURCE_SUFFIXES = (
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".c++",
    ".m",
    ".mm",
    ".i",
    ".ii",
    ".ll",
    ".bc",
    ".s",
    ".S",
)


def output_paths(command: Sequence[str]) -> List[str]:
    """The outputs named by ``-o`` (``-o X``, ``-oX``, ``-o=X``, ``--output[=]X``)
    in ``command``; ``-`` (stdout) excluded."""
    outputs: List[str] = []
    args = list(command[1:])
    for i, arg in enumerate(args):
        value: Optional[str] = None
        if arg in ("-o", "--output") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--output="):
            value = arg[len("--output=") :]
        elif arg.startswith("-o=") and len(arg) > 3:
            value = arg[3:]
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("-o="):
            value = arg[2:]
        if value and value != "-":
            outputs.append(value)
    return outputs


def _stem_pattern(stem: str, suffix: Optional[str]) -> str:
    """``stem[-anything]SUFFIX.tmp`` (any one suffix when ``suffix`` is None)."""
    ext = r"\.[^./]+" if suffix is None else re.escape(suffix)
    return rf"{re.escape(stem)}(-[^/]*)?{ext}\.tmp"


def temp_patterns(command: Sequence[str], cwd: Optional[str] = None) -> Dict[str, Pattern[str]]:
    """Directory -> pattern of the temporary names of the outputs written there.

    With ``-o X/out.o``: ``out.o.tmp`` and ``out-*.o.tmp`` in ``X``. Without
    ``-o``: ``STEM.EXT.tmp`` and ``STEM-*.EXT.tmp`` in ``cwd`` for every source
    argument ``STEM.c`` (``.ll``, ``.bc``...).
    """
    cwd = cwd or os.getcwd()
    by_dir: Dict[str, List[str]] = {}
    outputs = output_paths(command)
    for out in outputs:
        path = os.path.join(cwd, out)
        stem, suffix = os.path.splitext(os.path.basename(path))
        by_dir.setdefault(os.path.dirname(path), []).append(_stem_pattern(stem, suffix))
    if not outputs:
        for arg in command[1:]:
            if not arg.startswith("-") and arg.endswith(_SOURCE_SUFFIXES):
                stem = os.path.splitext(os.path.basename(arg))[0]
                by_dir.setdefault(cwd, []).append(_stem_pattern(stem, None))
    return {d: re.compile("|".join(f"(?:{p})" for p in ps)) for d, ps in by_dir.items()}


def _listing(directory: str) -> Set[str]:
    try:
        return set(os.listdir(directory))
    except OSError:
        return set()


class TempOutputs:
    """Snapshot at construction; :meth:`remove_new` deletes what the run left."""

    def __init__(self, command: Sequence[str], cwd: Optional[str] = None) -> None:
        self._watch: List[Tuple[str, Pattern[str], Set[str]]] = [
            (directory, pattern, _listing(directory))
            for directory, pattern in temp_patterns(command, cwd).items()
        ]

    def remove_new(self) -> List[str]:
        """Remove the regular files that appeared since the snapshot and match
        an output's temporary name; returns their paths."""
        removed = []
        for directory, pattern, before in self._watch:
            for name in sorted(_listing(directory) - before):
                path = os.path.join(directory, name)
                if pattern.fullmatch(name) and os.path.isfile(path) and not os.path.islink(path):
                    try:
                        os.unlink(path)
                    except OSError:
                        continue
                    removed.append(path)
        return removed


__all__ = ["TempOutputs", "output_paths", "temp_patterns"]

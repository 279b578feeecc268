"""A compilation database (``compile_commands.json``, as CMake, Bear or
Meson write it): each entry is one translation unit and one program, named
by its file's path relative to the common directory of all entries' files.

Of an entry's command (``arguments``, or ``command`` split like a POSIX
shell) only the options that change what the file means are kept, with
their paths made absolute against the entry's ``directory``: include paths
(``-I``, ``-isystem``, ``-iquote``, ``-idirafter``, ``-include``,
``-imacros``, ``--sysroot``, ``-isysroot``), macros (``-D``, ``-U``), the
language (``-std``, ``-x``, ``-ansi``), the target (``--target``,
``-target``) and the code-generation options ``-f*``, ``-m*`` and
``-pthread``. Dropped: the compiler (and any wrapper before it), the
inputs, ``-c``, ``-o``, ``-O*``, ``-g*``, ``-W*``, dependency-file options
(``-M*``), and options that load code or pass options to a compiler stage
(``-fplugin``, ``-fpass-plugin``, ``-Xclang``, ``-mllvm``, ``-X*``...):
the loop chooses the optimisation level and the plugin. An entry whose file
is not C or C++ (assembly...) is skipped; a file compiled by several entries
is one program (its first entry)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from mlbridge.corpus.files import read_json
from mlbridge.corpus.program import Program
from mlbridge.corpus.split import hash_split
from mlbridge.errors import CorpusError

NAME = "compile_commands.json"
#: The files of a compilation database that are programs.
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".i", ".ii")

#: Options kept whose value (separate or joined) is a path.
_PATH_OPTIONS = ("-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-isysroot")
#: Options kept whose value (separate or joined) is not a path.
_VALUE_OPTIONS = ("-D", "-U", "-x")
#: Options dropped whose value is the next argument.
_DROPPED_WITH_VALUE = frozenset(
    (
        "-o", "-MF", "-MT", "-MQ", "-Xclang", "-mllvm", "-Xlinker", "-Xassembler",
        "-Xpreprocessor", "-Xarch_host", "-Xarch_device", "-L", "-l", "-arch",
        "--param", "-include-pch", "-iprefix", "-iwithprefix", "-iwithprefixbefore",
        "-main-file-name", "-gcc-toolchain", "-T", "-z", "-u", "-Xopenmp-target",
    )
)  # fmt: skip
#: Joined options dropped although they start like kept ones.
_DROPPED_PREFIXES = (
    "-fplugin",
    "-fpass-plugin",
    "-fprofile",
    "-fcoverage",
    "-fdebug-prefix-map",
    "-fmacro-prefix-map",
    "-ffile-prefix-map",
    "-fsave-optimization-record",
    "-fcrash-diagnostics",
    "-fsyntax-only",
    "-fmodules-cache-path",
    "-fmodule-file",
    "-fmodule-map-file",
    "-fembed-bitcode",
    "-ftime-trace",
    "-fdiagnostics",
    "-fcolor-diagnostics",
    "-fno-color-diagnostics",
    "-mllvm",
)


def _absolute(value: str, directory: Path) -> str:
    return value if os.path.isabs(value) else os.path.normpath(directory / value)


def _option(arg: str) -> Optional[str]:
    """The kept option ``arg`` is (separate, or joined with its value)."""
    return next((o for o in _PATH_OPTIONS + _VALUE_OPTIONS if arg.startswith(o)), None)


def kept_flags(arguments: Sequence[str], directory: Path) -> Tuple[str, ...]:
    """The options of ``arguments`` (a whole command line, compiler first)
    that compiling the file again needs (see the module's docstring)."""
    kept: List[str] = []
    args = iter(arguments[1:])
    for arg in args:
        if not arg.startswith("-") or arg == "-":
            continue  # an input, or a wrapper's compiler
        if arg in _DROPPED_WITH_VALUE:
            next(args, None)
            continue
        if arg.startswith(_DROPPED_PREFIXES):
            continue
        option = _option(arg)
        if option is not None:
            value = arg[len(option) :] if arg != option else next(args, None)
            if value is None:
                continue
            if option in _PATH_OPTIONS:
                value = _absolute(value, directory)
            kept += [option + value] if option in ("-I", "-D", "-U") else [option, value]
        elif arg.startswith("--sysroot"):
            value = arg.partition("=")[2] if "=" in arg else next(args, None)
            if value is not None:
                kept.append(f"--sysroot={_absolute(value, directory)}")
        elif arg == "-target":
            value = next(args, None)
            if value is not None:
                kept.append(f"--target={value}")
        elif arg.startswith(("-std=", "--std=", "--target=", "-f", "-m")) or arg in (
            "-ansi",
            "-pthread",
            "-nostdinc",
            "-nostdinc++",
        ):
            kept.append(arg)
        # Everything else (-c, -O*, -g*, -W*, -M*, -pipe, -v...) is dropped.
    return tuple(kept)


def _entry(entry: Any, index: int, where: Path) -> Tuple[Path, Tuple[str, ...]]:
    """An entry's file (absolute) and kept flags, or CorpusError."""
    what = f"{where}: entry {index}"
    if not isinstance(entry, dict):
        raise CorpusError(f"{what}: expected an object, got {type(entry).__name__}")
    directory, file = entry.get("directory"), entry.get("file")
    if not isinstance(directory, str) or not isinstance(file, str) or not file:
        raise CorpusError(f'{what}: "directory" and "file" must be strings')
    base = Path(_absolute(directory, where.parent))
    if "arguments" in entry:
        arguments = entry["arguments"]
        if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
            raise CorpusError(f'{what}: "arguments" must be a list of strings')
    elif "command" in entry:
        if not isinstance(entry["command"], str):
            raise CorpusError(f'{what}: "command" must be a string')
        try:
            arguments = shlex.split(entry["command"])
        except ValueError as err:
            raise CorpusError(f'{what}: "command" cannot be split: {err}') from None
    else:
        raise CorpusError(f'{what}: has neither "arguments" nor "command"')
    if "\0" in file or any("\0" in a for a in arguments):
        raise CorpusError(f"{what}: a NUL character in a path or an argument")
    return Path(_absolute(file, base)), kept_flags(arguments, base)


def _entries(entries: Any, where: Path) -> Iterator[Tuple[Path, Tuple[str, ...]]]:
    if not isinstance(entries, list):
        raise CorpusError(f"{where}: expected a JSON array of entries")
    for index, entry in enumerate(entries):
        yield _entry(entry, index, where)


def compdb_programs(path: Path) -> List[Program]:
    """The programs of the compilation database ``path``, split by :func:`hash_split`."""
    units: Dict[Path, Tuple[str, ...]] = {}
    for file, flags in _entries(read_json(path), path):
        if file.suffix in SOURCE_SUFFIXES and file not in units:
            units[file] = flags
    if not units:
        raise CorpusError(f"{path}: no C or C++ translation unit")
    for file in units:
        if not file.is_file():
            raise CorpusError(f"{path}: {file} does not exist")
    root = os.path.commonpath([str(f.parent) for f in units])
    names = {file: os.path.relpath(file, root) for file in units}
    splits = hash_split(list(names.values()))
    return [
        Program(names[file], (file,), flags, splits[names[file]]) for file, flags in units.items()
    ]

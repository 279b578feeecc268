"""A compilation database (``compile_commands.json``, as CMake, Bear or
Meson write it): each entry is one translation unit and one program, named
by its file's path relative to the common directory of all entries' files.

The database is untrusted input, and the options of its commands reach
clang's command line: of an entry's command (``arguments``, or ``command``
split like a POSIX shell) only the options of an ALLOW-LIST are kept, each
named here (:data:`KEPT_FLAGS`, :data:`KEPT_VALUES`, :data:`INCLUDE_PATHS`)
and each with its value checked. None of them names a file the compiler
writes; the only paths kept are those the preprocessor reads:

- include paths: ``-I``, ``-isystem``, ``-iquote``, ``-idirafter``,
  ``-include``, ``-imacros``, ``--sysroot``, ``-isysroot``, their values
  made absolute against the entry's ``directory`` (read-only inputs, which
  may point anywhere);
- macros: ``-D`` (a macro name, then an optional ``=VALUE``), ``-U``;
- the language: ``-std=``, ``-x`` (C, C++, Objective-C), ``-ansi``;
- the target: ``--target=`` / ``-target``, ``-march=``, ``-mcpu=``,
  ``-mtune=``, ``-mabi=``, ``-mfpu=``, ``-mfloat-abi=``, ``-mcmodel=``...,
  ``-m32`` / ``-m64``, and the ISA features (``-mavx2``, ``-mno-sse4.2``...);
- the ``-f`` options that change what the code means or its shape
  (``-fPIC``, ``-fno-strict-aliasing``, ``-fwrapv``, ``-fvisibility=``...),
  ``-pthread``, ``-nostdinc``;
- diagnostics turned off: ``-Wno-NAME``, ``-Wno-error=NAME``. clang-19 makes
  errors of what older compilers warned about (``register`` in C++17,
  implicit function declarations), and builds turn them off this way.

Everything else is dropped: the compiler (and any wrapper before it), the
inputs, the options the loop sets itself (``-c``, ``-o``, ``-O*``), and the
rest, which is reported once per database (:attr:`CompilationDatabase.dropped`,
a warning of the ``mlbridge.corpus`` logger), by name, without values.
Dropped on purpose among them: options that write files (``-MF``,
``-foptimization-record-file=``, ``-ftime-trace``, ``-save-temps``,
``-fstack-usage``, ``-fmodule-output=``, ``-fprofile-*``...), load code or
reach inside the compiler (``-fplugin=``, ``-Xclang``, ``-mllvm``...),
steer the optimiser the loop measures (``-finline-*``, ``-funroll-loops``...),
or need a runtime or extra files (``-fsanitize=``, ``-fopenmp``,
``-fmodules``). An entry whose file is not C or C++ (assembly...) is
skipped; a file compiled by several entries is one program (its first
entry)."""

from __future__ import annotations

import logging
import os
import re
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from mlbridge.corpus.files import read_json
from mlbridge.corpus.program import Program
from mlbridge.corpus.split import hash_split
from mlbridge.errors import CorpusError

_LOG = logging.getLogger("mlbridge.corpus")

NAME = "compile_commands.json"
#: The files of a compilation database that are programs.
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".i", ".ii")


def _both(prefix: str, *names: str) -> FrozenSet[str]:
    """``PREFIXNAME`` and ``PREFIXno-NAME`` for each name."""
    return frozenset(f"{prefix}{no}{name}" for name in names for no in ("", "no-"))


#: x86 instruction-set features, each kept as ``-mNAME`` and ``-mno-NAME``.
_X86_FEATURES = (
    "adx", "aes", "amx-bf16", "amx-complex", "amx-fp16", "amx-int8", "amx-tile", "avx",
    "avx10.1-256", "avx10.1-512", "avx2", "avx512bf16", "avx512bitalg", "avx512bw", "avx512cd",
    "avx512dq", "avx512f", "avx512fp16", "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512vl",
    "avx512vnni", "avx512vp2intersect", "avx512vpopcntdq", "avxifma", "avxneconvert", "avxvnni",
    "avxvnniint16", "avxvnniint8", "bmi", "bmi2", "cldemote", "clflushopt", "clwb", "clzero",
    "cmpccxadd", "crc32", "cx16", "enqcmd", "evex512", "f16c", "fma", "fma4", "fsgsbase", "fxsr",
    "gfni", "hreset", "invpcid", "kl", "lwp", "lzcnt", "mmx", "movbe", "movdir64b", "movdiri",
    "mwaitx", "pclmul", "pconfig", "pku", "popcnt", "prefetchi", "prfchw", "ptwrite", "raoint",
    "rdpid", "rdpru", "rdrnd", "rdseed", "rtm", "sahf", "serialize", "sgx", "sha", "sha512",
    "shstk", "sm3", "sm4", "sse", "sse2", "sse3", "sse4.1", "sse4.2", "sse4a", "ssse3", "tbm",
    "tsxldtrk", "uintr", "usermsr", "vaes", "vpclmulqdq", "vzeroupper", "waitpkg", "wbnoinvd",
    "widekl", "x87", "xop", "xsave", "xsavec", "xsaveopt", "xsaves",
)  # fmt: skip

#: Options without a value that are kept: what the code means and its shape,
#: for the target; none of them writes a file or steers the optimiser.
KEPT_FLAGS: FrozenSet[str] = frozenset(
    ("-ansi", "-pthread", "-nostdinc", "-nostdinc++", "-nostdlibinc", "-nobuiltininc")
) | frozenset(
    (
        # -f options with a positive form only (the negative ones are below).
        "-ffreestanding", "-fstack-protector-strong", "-fstack-protector-all",
        "-fcf-protection", "-fms-extensions", "-fgnu89-inline", "-fshort-enums",
        "-fshort-wchar", "-fvisibility-inlines-hidden", "-fstrict-enums",
        "-fstrict-vtable-pointers", "-fblocks", "-fcoroutines", "-fsized-deallocation",
        "-faligned-allocation", "-fcxx-exceptions", "-fapprox-func", "-fhonor-nans",
        "-fhonor-infinities", "-ffinite-math-only", "-funsafe-math-optimizations",
        "-fassociative-math", "-freciprocal-math", "-ftrapv",
        # The target: word size, ABI, code model.
        "-m16", "-m32", "-m64", "-mx32", "-msoft-float", "-mhard-float", "-mgeneral-regs-only",
        "-mthumb", "-mno-thumb", "-malign-double", "-mlong-double-64", "-mlong-double-80",
        "-mlong-double-128",
    )
) | _both(
    "-f",
    "PIC", "pic", "PIE", "pie", "strict-aliasing", "strict-overflow", "wrapv",
    "common", "signed-char", "unsigned-char", "builtin", "exceptions", "rtti",
    "asynchronous-unwind-tables", "unwind-tables", "stack-protector", "omit-frame-pointer",
    "function-sections", "data-sections", "fast-math", "math-errno", "signed-zeros",
    "trapping-math", "rounding-math", "delete-null-pointer-checks", "plt", "char8_t",
    "declspec", "gnu-keywords", "asm", "dollars-in-identifiers", "trigraphs",
    "threadsafe-statics", "use-cxa-atexit", "elide-constructors", "zero-initialized-in-bss",
    "jump-tables", "semantic-interposition", "stack-clash-protection",
    "strict-float-cast-overflow", "strict-return",
) | _both(
    "-m",
    "red-zone", "omit-leaf-frame-pointer", "stackrealign", "implicit-float", "retpoline",
    "speculative-load-hardening", "strict-align", "unaligned-access", "outline-atomics",
    "long-calls", "ms-bitfields", *_X86_FEATURES,
)  # fmt: skip


def _pattern(regex: str) -> Callable[[str], bool]:
    compiled = re.compile(regex, re.DOTALL)
    return lambda value: compiled.fullmatch(value) is not None


def _one_of(*values: str) -> Callable[[str], bool]:
    return frozenset(values).__contains__


_IDENTIFIER = _pattern(r"[A-Za-z_][A-Za-z0-9_]*")
#: The languages of ``-x``: C, C++, Objective-C, and the same preprocessed.
_LANGUAGES = _one_of(
    "c", "c++", "objective-c", "objective-c++", "cpp-output", "c++-cpp-output",
    "objective-c-cpp-output", "objective-c++-cpp-output",
)  # fmt: skip
#: A CPU, an architecture (``armv8.2-a+crypto``), a triple, an FPU.
_TARGET_NAME = _pattern(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")

#: Options with a value that are kept, by the name they are given under (a
#: joined ``name=`` or ``-fno-builtin-``, else joined or the next argument):
#: how they are written back (joined when it ends with ``=`` or ``-`` or is
#: ``-D`` / ``-U``, else separate) and what their value must be.
KEPT_VALUES: Mapping[str, Tuple[str, Callable[[str], bool]]] = {
    "-D": ("-D", _pattern(r"[A-Za-z_][A-Za-z0-9_]*(\([A-Za-z0-9_, .]*\))?(=.*)?")),
    "-U": ("-U", _IDENTIFIER),
    "-x": ("-x", _LANGUAGES),
    "-std=": ("-std=", _pattern(r"[a-z0-9+:]+")),
    "--std=": ("-std=", _pattern(r"[a-z0-9+:]+")),
    "-target": ("--target=", _TARGET_NAME),
    "--target=": ("--target=", _TARGET_NAME),
    "-march=": ("-march=", _TARGET_NAME),
    "-mcpu=": ("-mcpu=", _TARGET_NAME),
    "-mtune=": ("-mtune=", _TARGET_NAME),
    "-mfpu=": ("-mfpu=", _TARGET_NAME),
    "-mabi=": ("-mabi=", _pattern(r"[A-Za-z0-9_.]+")),
    "-mfloat-abi=": ("-mfloat-abi=", _one_of("soft", "softfp", "hard")),
    "-mcmodel=": (
        "-mcmodel=",
        _one_of("tiny", "small", "kernel", "medium", "large", "medlow", "medany"),
    ),
    "-mbranch-protection=": ("-mbranch-protection=", _pattern(r"[a-z+-]+")),
    "-mfpmath=": ("-mfpmath=", _one_of("sse", "387")),
    "-mprefer-vector-width=": ("-mprefer-vector-width=", _one_of("none", "128", "256", "512")),
    "-mregparm=": ("-mregparm=", _one_of("0", "1", "2", "3")),
    "-mstack-alignment=": ("-mstack-alignment=", _pattern(r"[0-9]{1,3}")),
    "-mtls-dialect=": ("-mtls-dialect=", _one_of("gnu", "gnu2", "desc", "trad")),
    "-fvisibility=": ("-fvisibility=", _one_of("default", "hidden", "protected", "internal")),
    "-fcf-protection=": ("-fcf-protection=", _one_of("return", "branch", "full", "none")),
    "-ffp-contract=": ("-ffp-contract=", _one_of("fast", "on", "off", "fast-honor-pragmas")),
    "-ffp-model=": ("-ffp-model=", _one_of("precise", "strict", "fast")),
    "-ftrivial-auto-var-init=": (
        "-ftrivial-auto-var-init=",
        _one_of("uninitialized", "zero", "pattern"),
    ),
    "-fpack-struct=": ("-fpack-struct=", _one_of("1", "2", "4", "8", "16")),
    "-flax-vector-conversions=": ("-flax-vector-conversions=", _one_of("none", "integer", "all")),
    "-fno-builtin-": ("-fno-builtin-", _IDENTIFIER),
}

#: Options whose value is a path the preprocessor reads (any non-empty
#: value, made absolute), by the name they are given under: how they are
#: written back (as for :data:`KEPT_VALUES`).
INCLUDE_PATHS: Mapping[str, str] = {
    "-I": "-I",
    "-isystem": "-isystem",
    "-iquote": "-iquote",
    "-idirafter": "-idirafter",
    "-include": "-include",
    "-imacros": "-imacros",
    "-isysroot": "-isysroot",
    "--sysroot": "--sysroot=",
    "--sysroot=": "--sysroot=",
}

#: Dropped options whose value is the next argument (read to skip it).
_DROPPED_WITH_VALUE = frozenset(
    (
        "-o", "-MF", "-MT", "-MQ", "-MJ", "-Xclang", "-mllvm", "-mmlir", "-Xlinker",
        "-Xassembler", "-Xpreprocessor", "-Xanalyzer", "-Xarch_host", "-Xarch_device",
        "-Xopenmp-target", "-Xcuda-fatbinary", "-Xcuda-ptxas", "-L", "-l", "-B", "-F", "-arch",
        "--param", "-include-pch", "-iprefix", "-iwithprefix", "-iwithprefixbefore",
        "-iwithsysroot", "-iframework", "-isystem-after", "-cxx-isystem", "-ivfsoverlay",
        "-main-file-name", "-gcc-toolchain", "-T", "-z", "-u", "-working-directory",
        "-module-dependency-dir", "-dependency-file", "-dependency-dot",
        "-serialize-diagnostics", "--serialize-diagnostics",
    )
)  # fmt: skip
#: Options taking the next argument as their value.
_WITH_VALUE = _DROPPED_WITH_VALUE | frozenset(
    n for n in (*INCLUDE_PATHS, *KEPT_VALUES) if not n.endswith(("=", "-"))
)
#: Options whose value may also be joined (``-Ifoo``, ``-MFfoo``), longest
#: first: kept ones, and dropped ones reported by their name only.
_JOINED = tuple(
    sorted(
        (
            "-I", "-D", "-U", "-x", "-isystem", "-iquote", "-idirafter", "-include", "-imacros",
            "-isysroot", "-fno-builtin-", "-MF", "-MT", "-MQ", "-MJ", "-L", "-l", "-Wl,", "-Wa,",
            "-Wp,",
        ),
        key=len,
        reverse=True,
    )
)  # fmt: skip
#: Dropped without a word: the loop sets these itself.
_REPLACED = _pattern(r"-c|-o|-O[0-9sgz]?|-Ofast")
#: Longest option name reported.
_MAX_REPORTED_NAME = 40


@dataclass(frozen=True)
class Flags:
    """One command's options: ``kept`` (ready for clang), and the names of
    those ``dropped`` (values left out), but for the loop's own."""

    kept: Tuple[str, ...]
    dropped: Tuple[str, ...]


def _absolute(value: str, directory: Path) -> str:
    return value if os.path.isabs(value) else os.path.normpath(directory / value)


def _is_joined_value(name: str, value: str) -> bool:
    """Whether ``value`` after ``name`` is its joined value (``-isystem-after``
    is another option; ``-Wl,`` takes a list of options)."""
    return bool(value) and (name.endswith(",") or not value.startswith("-"))


def _options(arguments: Iterable[str]) -> Iterator[Tuple[str, Optional[str]]]:
    """The options of ``arguments`` (inputs and the compiler left out), each
    as its name and its value (None: none, or a missing next argument)."""
    args = iter(arguments)
    for arg in args:
        if arg == "--":
            return  # only inputs follow
        if not arg.startswith("-") or arg == "-":
            continue  # an input, or a wrapper's compiler
        if arg in _WITH_VALUE:
            yield arg, next(args, None)
            continue
        joined = next((n for n in _JOINED if arg.startswith(n)), None)
        if joined is not None and _is_joined_value(joined, arg[len(joined) :]):
            yield joined, arg[len(joined) :]
        elif "=" in arg:
            name, _, value = arg.partition("=")
            yield f"{name}=", value
        else:
            yield arg, None


def _written(name: str, value: str) -> List[str]:
    """Option ``name`` with ``value``, as one argument or two."""
    if name.endswith(("=", "-")) or name in ("-I", "-D", "-U"):
        return [name + value]
    return [name, value]


#: A diagnostic's name, as in ``-Wno-NAME`` and ``-Wno-error=NAME``.
_DIAGNOSTIC = _pattern(r"[a-z0-9][a-z0-9+.-]{0,80}")


def _kept(name: str, value: Optional[str], directory: Path) -> Optional[List[str]]:
    """The arguments option ``name`` with ``value`` is kept as, or None."""
    if value is None:
        if name.startswith("-Wno-") and _DIAGNOSTIC(name[len("-Wno-") :]):
            return [name]
        return [name] if name in KEPT_FLAGS else None
    if name == "-Wno-error=":
        return [name + value] if _DIAGNOSTIC(value) else None
    if name in INCLUDE_PATHS:
        return _written(INCLUDE_PATHS[name], _absolute(value, directory)) if value else None
    if name in KEPT_VALUES:
        written, valid = KEPT_VALUES[name]
        return _written(written, value) if valid(value) else None
    return None


def _reported_name(name: str) -> str:
    """``name`` as it is reported: printable, and not too long."""
    shown = "".join(c if c.isprintable() else "?" for c in name)
    return shown if len(shown) <= _MAX_REPORTED_NAME else shown[: _MAX_REPORTED_NAME - 3] + "..."


def split_flags(arguments: Sequence[str], directory: Path) -> Flags:
    """The options of ``arguments`` (a whole command line, compiler first)
    that compiling the file again needs, and those dropped (see the
    module's docstring); relative paths are relative to ``directory``."""
    kept: List[str] = []
    dropped: List[str] = []
    for name, value in _options(arguments[1:]):
        written = _kept(name, value, directory)
        if written is not None:
            kept += written
        elif not _REPLACED(name):
            dropped.append(_reported_name(name))
    return Flags(tuple(kept), tuple(dropped))


def kept_flags(arguments: Sequence[str], directory: Path) -> Tuple[str, ...]:
    """The options of ``arguments`` kept by :func:`split_flags`."""
    return split_flags(arguments, directory).kept


def _entry(entry: Any, index: int, where: Path) -> Tuple[Path, Flags]:
    """An entry's file (absolute) and flags, or CorpusError."""
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
    return Path(_absolute(file, base)), split_flags(arguments, base)


def _entries(entries: Any, where: Path) -> Iterator[Tuple[Path, Flags]]:
    if not isinstance(entries, list):
        raise CorpusError(f"{where}: expected a JSON array of entries")
    for index, entry in enumerate(entries):
        yield _entry(entry, index, where)


def entries_and_files(path: Path) -> List[Tuple[Any, Path]]:
    """The entries of the compilation database ``path``, in order, each
    with its file, absolute (as :func:`read_compdb` resolves it)."""
    path = Path(os.path.abspath(path))
    entries = read_json(path)
    return [(entry, file) for entry, (file, _) in zip(entries, _entries(entries, path))]


@dataclass(frozen=True)
class CompilationDatabase:
    """What :func:`read_compdb` read: the ``programs``, and the options
    ``dropped`` from their commands (names, no values: how many times each),
    but for those the loop sets itself (``-c``, ``-o``, ``-O*``)."""

    path: Path
    programs: List[Program]
    dropped: Mapping[str, int]

    def dropped_summary(self, most: int = 20) -> str:
        """The dropped options in one line, most frequent first (at most
        ``most`` names), or "" when none was."""
        ranked = sorted(self.dropped.items(), key=lambda item: (-item[1], item[0]))
        shown = ", ".join(f"{name} ({count})" for name, count in ranked[:most])
        more = f", and {len(ranked) - most} more" if len(ranked) > most else ""
        return shown + more


def read_compdb(path: Path) -> CompilationDatabase:
    """The programs of the compilation database ``path``, split by
    :func:`hash_split`, and the options dropped from them (nothing
    reported: :func:`compdb_programs` does)."""
    path = Path(os.path.abspath(path))  # every source absolute: never read as an option
    units: Dict[Path, Flags] = {}
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
    programs = [
        Program(names[file], (file,), flags.kept, splits[names[file]])
        for file, flags in units.items()
    ]
    dropped = Counter(name for flags in units.values() for name in flags.dropped)
    return CompilationDatabase(path, programs, dict(dropped))


def report_dropped(database: CompilationDatabase) -> None:
    """Warns once (``mlbridge.corpus`` logger: stderr unless logging is
    configured) of the options dropped from ``database``'s commands."""
    if database.dropped:
        _LOG.warning(
            "mlbridge.corpus: %s: %d options not on the allow-list dropped (docs/corpus.md): %s",
            database.path,
            sum(database.dropped.values()),
            database.dropped_summary(),
        )


def compdb_programs(path: Path) -> List[Program]:
    """The programs of the compilation database ``path`` (:func:`read_compdb`),
    the options dropped from them reported once (:func:`report_dropped`)."""
    database = read_compdb(path)
    report_dropped(database)
    return database.programs

"""The options a corpus's commands bring to clang's command line
(mlbridge.corpus.compdb's allow-list, docs/corpus.md): a compile_commands.json
is untrusted, and clang-19 accepts options that write files where they say.

A hostile database (every option that writes a file, loads code or reaches
inside the compiler, and a function whose assembler name is shell code, with
``-foptimization-record-file=`` aimed at a shell script) is compiled the
way the loop and the gym compile: the script is unchanged, nothing appears
outside the work directory, the dropped options are reported once, and only
the allow-listed options are kept. An MLGO corpus's recorded options reach no
command line either."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

import pytest

from mlbridge.corpus import compdb, load_corpus
from mlbridge.errors import MlbridgeError

CLANG, SIZE = "clang-19", "llvm-size-19"
needs_clang = pytest.mark.skipif(
    shutil.which(CLANG) is None or shutil.which(SIZE) is None,
    reason=f"{CLANG} and {SIZE} are needed (scripts/setup installs them)",
)

#: The script the remarks of the loop's old compilations overwrote.
VICTIM_TEXT = "#!/bin/sh\necho victim\n"
#: A function whose assembler name runs ``touch PWNED`` in a shell reading
#: clang's YAML remarks (a double-quoted YAML string: ``$(...)`` expands).
PWN_SOURCE = r"""#include "config.h"
#if !FLAG
#error
#endif
static int square(int x) __asm__("\n$(touch PWNED)");
static int square(int x) { return x * x; }
int sum_squares(int n) { int s = 0; for (int i = 0; i < n; i++) s += square(i); return s; }
"""
#: A file that compiles only with the entries' ``-I`` and ``-D``.
PLAIN_SOURCE = '#include "config.h"\n#if !FLAG\n#error\n#endif\nint f(int x) { return x + 1; }\n'


# --- the allow-list, option by option --------------------------------------------------

KEPT_CASES: List[Tuple[str, List[str], Tuple[str, ...]]] = [
    (
        "include paths, joined and separate, made absolute",
        ["cc", "-Iinc", "-I", "../up", "-isystem", "sys", "-isystemsys2", "-iquote", "q",
         "-idirafter", "/abs/after", "-include", "./pre.h", "-imacros", "m.h", "-isysroot",
         "isr", "--sysroot", "root", "--sysroot=/abs/root"],
        ("-I/w/build/inc", "-I/w/up", "-isystem", "/w/build/sys", "-isystem", "/w/build/sys2",
         "-iquote", "/w/build/q", "-idirafter", "/abs/after", "-include", "/w/build/pre.h",
         "-imacros", "/w/build/m.h", "-isysroot", "/w/build/isr", "--sysroot=/w/build/root",
         "--sysroot=/abs/root"),
    ),
    (
        "macros, joined and separate; a name that is no identifier is dropped",
        ["cc", "-DA", "-D", "B=2", "-DF(x,y)=x+y", '-DS="a b"', "-UC", "-U", "D", "-D1BAD",
         "-D-fplugin=/evil.so", "-U", "E=1"],
        ("-DA", "-DB=2", "-DF(x,y)=x+y", '-DS="a b"', "-UC", "-UD"),
    ),
    (
        "the language; -x a header (a precompiled header as output) is dropped",
        ["cc", "-std=c99", "--std=gnu++17", "-x", "c++", "-xc", "-ansi", "-x", "c-header",
         "-std=../x"],
        ("-std=c99", "-std=gnu++17", "-x", "c++", "-x", "c", "-ansi"),
    ),
    (
        "the target and ISA features; values checked",
        ["cc", "-target", "aarch64-linux-gnu", "--target=x86_64-linux-gnu",
         "-march=armv8.2-a+crypto", "-mcpu=cortex-a53", "-mtune=generic", "-m32", "-m64",
         "-msse4.2", "-mno-avx2", "-mfloat-abi=hard", "-mfloat-abi=/x", "-mcmodel=small",
         "-march=../x", "-mabi=lp64"],
        ("--target=aarch64-linux-gnu", "--target=x86_64-linux-gnu", "-march=armv8.2-a+crypto",
         "-mcpu=cortex-a53", "-mtune=generic", "-m32", "-m64", "-msse4.2", "-mno-avx2",
         "-mfloat-abi=hard", "-mcmodel=small", "-mabi=lp64"),
    ),
    (
        "-f options of the allow-list, by exact name or a checked name= value",
        ["cc", "-fPIC", "-fno-strict-aliasing", "-fwrapv", "-fno-common", "-fsigned-char",
         "-fno-builtin", "-fno-builtin-memcpy", "-fno-builtin-../x", "-ffreestanding",
         "-fno-exceptions", "-fno-rtti", "-fvisibility=hidden", "-fvisibility=/x",
         "-fstack-protector-strong", "-ffast-math", "-fno-math-errno", "-fcf-protection=full",
         "-ffunction-sections", "-pthread", "-nostdinc", "-nostdinc++"],
        ("-fPIC", "-fno-strict-aliasing", "-fwrapv", "-fno-common", "-fsigned-char",
         "-fno-builtin", "-fno-builtin-memcpy", "-ffreestanding", "-fno-exceptions",
         "-fno-rtti", "-fvisibility=hidden", "-fstack-protector-strong", "-ffast-math",
         "-fno-math-errno", "-fcf-protection=full", "-ffunction-sections", "-pthread",
         "-nostdinc", "-nostdinc++"),
    ),
    (
        "diagnostics turned off (clang-19 errors older compilers warned about); names checked",
        ["cc", "-Wno-register", "-Wno-error=deprecated-declarations", "-Wno-c++11-narrowing",
         "-Wall", "-Werror", "-Werror=format", "-Wno-", "-Wno-x;y", "-Wno-error=/x", "-Wno-error",
         "-Wl,-Wno-x"],
        ("-Wno-register", "-Wno-error=deprecated-declarations", "-Wno-c++11-narrowing",
         "-Wno-error"),
    ),
    (
        "options that write files: all dropped",
        ["cc", "-foptimization-record-file=/v.sh", "-fproc-stat-report=/s", "-fmodule-output=/m",
         "-fsave-optimization-record", "-fsave-optimization-record=yaml", "-ftime-trace",
         "-ftime-trace=/t", "-fcrash-diagnostics-dir=/c", "-save-temps", "-save-temps=obj",
         "-fstack-usage", "-MD", "-MMD", "-MF", "/d", "-MFjoined.d", "-MJ", "/j",
         "-fprofile-generate", "-fprofile-instr-generate=/p", "-ftest-coverage",
         "-fdump-record-layouts", "-fmodules", "-fmodules-cache-path=/mc",
         "-fbuild-session-file=/b", "-fxray-instrument", "-fsanitize-coverage=trace-pc",
         "-fsanitize=address", "-gsplit-dwarf", "-module-dependency-dir", "/dd",
         "-serialize-diagnostics", "/sd", "-Wp,-MD,/wp.d", "-working-directory", "/wd"],
        (),
    ),
    (
        "options that load code or reach inside clang: dropped with their value",
        ["cc", "-fplugin=/p.so", "-fpass-plugin=/p.so", "-Xclang", "-I/evil", "-mllvm",
         "-DX", "-mllvm", "-pass-remarks-output=/r", "-Xclang", "-load", "-Xclang", "/p.so",
         "-Xlinker", "-Ifoo", "-Wl,-rpath,/x", "-B", "/bin", "-include-pch", "p.pch",
         "-isystem-after", "after", "-fsomething-unknown", "-mllvm=-x", "-msomething-unknown"],
        (),
    ),
    (
        "-- ends the options; inputs and the compiler are left out",
        ["ccache", "cc", "-DA", "in.c", "-", "--", "-DB", "-fplugin=x.so"],
        ("-DA",),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    "arguments, kept", [c[1:] for c in KEPT_CASES], ids=[c[0] for c in KEPT_CASES]
)
def test_kept_flags(arguments: List[str], kept: Tuple[str, ...]) -> None:
    assert compdb.kept_flags(arguments, Path("/w/build")) == kept


def test_dropped_options_are_named_without_their_values() -> None:
    flags = compdb.split_flags(
        ["cc", "-c", "-O2", "-o", "x.o", "-g", "-MF", "/secret/d", "-MF/secret/e",
         "-foptimization-record-file=/secret/v", "-Wl,-rpath,/secret/x", "-Xclang", "-ast-dump",
         "-fvisibility=/secret/y", "-f" + "x" * 60, "-fbad\nname"],
        Path("/w"),
    )  # fmt: skip
    assert flags.kept == ()
    assert flags.dropped == (
        "-g", "-MF", "-MF", "-foptimization-record-file=", "-Wl,", "-Xclang", "-fvisibility=",
        "-f" + "x" * 35 + "...", "-fbad?name",
    )  # fmt: skip


#: Fragments of the names of options that write files, load code, or pass
#: options on to a stage of the compiler.
WRITER_FRAGMENTS = (
    "record", "output", "file", "-dir", "dir=", "trace", "report", "profile", "plugin", "-save",
    "save-", "dump", "usage", "llvm", "coverage", "module", "sanitize", "xray", "-M", "-X", "-W",
)  # fmt: skip


def test_the_allow_list_names_no_option_that_writes_or_loads() -> None:
    named = set(compdb.KEPT_FLAGS) | set(compdb.KEPT_VALUES)  # INCLUDE_PATHS: read only
    assert not {n for n in named if n in ("-f", "-m", "-X", "-W", "-M")}  # no generic prefix
    for fragment in WRITER_FRAGMENTS:
        assert not [n for n in named if fragment in n], fragment


# --- a hostile compilation database, compiled -----------------------------------------


def make_hostile_compdb(root: Path) -> Tuple[Path, Path, Path]:
    """The database, the victim script, and the directory its options aim
    at (besides the victim), each in ``root``."""
    src, inc, aimed = root / "corpus" / "src", root / "corpus" / "include", root / "aimed"
    src.mkdir(parents=True)
    inc.mkdir()
    aimed.mkdir()
    (inc / "config.h").write_text("#define FROM_CONFIG 1\n")
    (src / "pwn.c").write_text(PWN_SOURCE)
    for name in ("stats.c", "module.cc", "stages.c"):
        (src / name).write_text(PLAIN_SOURCE)
    victim = root / "victim.sh"
    victim.write_text(VICTIM_TEXT)
    victim.chmod(0o755)
    common = ["-I../include", "-DFLAG=1"]
    entries = [
        {
            "directory": "src",
            "file": "pwn.c",
            "arguments": ["cc", *common, "-O2", "-g", "-Wall", "-MD", "-MT", "pwn.o", "-MF",
                          str(aimed / "pwn.d"), f"-foptimization-record-file={victim}", "-c",
                          "pwn.c", "-o", "pwn.o"],
        },
        {
            "directory": "src",
            "file": "stats.c",
            "command": f"cc {' '.join(common)} -fno-strict-aliasing "
            f"-fproc-stat-report={aimed / 'stats.csv'} -ftime-trace={aimed / 'trace.json'} "
            f"-fcrash-diagnostics-dir={aimed / 'crash'} -save-temps -fstack-usage "
            "-fsave-optimization-record -gsplit-dwarf -ftest-coverage -c stats.c -o stats.o",
        },
        {
            "directory": "src",
            "file": "module.cc",
            "arguments": ["c++", "-std=c++20", *common, f"-fmodule-output={aimed / 'm.pcm'}",
                          "-c", "module.cc"],
        },
        {
            "directory": "src",
            "file": "stages.c",
            "arguments": ["cc", *common, "-fPIC", "-msse4.2", "-Xclang",
                          f"-foptimization-record-file={aimed / 'xclang.yaml'}", "-mllvm",
                          f"-pass-remarks-output={aimed / 'mllvm.yaml'}",
                          f"-Wp,-MD,{aimed / 'wp.d'}", "-fplugin=/nonexistent/plugin.so",
                          "-fsomething-unknown", "-c", "stages.c"],
        },
    ]  # fmt: skip
    path = root / "corpus" / "compile_commands.json"
    path.write_text(json.dumps(entries))
    return path, victim, aimed


def expected_flags(corpus: Path) -> Dict[str, Tuple[str, ...]]:
    common = (f"-I{corpus / 'include'}", "-DFLAG=1")
    return {
        "pwn.c": common,
        "stats.c": (*common, "-fno-strict-aliasing"),
        "module.cc": ("-std=c++20", *common),
        "stages.c": (*common, "-fPIC", "-msse4.2"),
    }


#: Each option dropped from the hostile database, and how many times.
EXPECTED_DROPPED = {
    "-g": 1, "-Wall": 1, "-MD": 1, "-MT": 1, "-MF": 1, "-foptimization-record-file=": 1,
    "-fproc-stat-report=": 1, "-ftime-trace=": 1, "-fcrash-diagnostics-dir=": 1,
    "-save-temps": 1, "-fstack-usage": 1, "-fsave-optimization-record": 1, "-gsplit-dwarf": 1,
    "-ftest-coverage": 1, "-fmodule-output=": 1, "-Xclang": 1, "-mllvm": 1, "-Wp,": 1,
    "-fplugin=": 1, "-fsomething-unknown": 1,
}  # fmt: skip


def snapshot(root: Path, exclude: Path) -> Dict[str, str]:
    """Every file and directory under ``root`` but ``exclude``: its hash."""
    found: Dict[str, str] = {}
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if Path(directory, d) != exclude]
        for name in subdirs:
            found[os.path.relpath(Path(directory, name), root)] = "directory"
        for name in files:
            path = Path(directory, name)
            found[os.path.relpath(path, root)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def compile_like_the_loop(corpus: Path, work: Path) -> List[str]:
    """mlbridge loop: its corpus (with the bundled programs), each program
    compiled by the toolchain (corpus programs only); the failures."""
    from mlbridge.corpus.defaults import load_corpus as loop_corpus
    from mlbridge.problems.inlining.toolchain import compile_program

    failures = []
    for program in loop_corpus(corpus):
        if not program.name.startswith("demo-"):
            try:
                compile_program(program, work / program.dirname)
            except MlbridgeError as err:
                failures.append(str(err))
    return failures


def compile_like_the_gym(corpus: Path, work: Path) -> List[str]:
    """The environments: the corpus's modules, prepared into a cache in
    ``work``; the failure."""
    from mlbridge.gym.corpus_modules import corpus_modules

    try:
        corpus_modules(corpus, "all", False, work / "modules")
    except MlbridgeError as err:
        return [str(err)]
    return []


@needs_clang
@pytest.mark.parametrize("compile_corpus", [compile_like_the_loop, compile_like_the_gym])
def test_a_hostile_compile_commands_writes_nothing_outside_the_work_directory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    compile_corpus: Callable[[Path, Path], List[str]],
) -> None:
    path, victim, aimed = make_hostile_compdb(tmp_path)
    work, cwd, shell = tmp_path / "work", tmp_path / "cwd", tmp_path / "shell"
    cwd.mkdir()
    shell.mkdir()
    monkeypatch.chdir(cwd)  # what clang writes to its working directory is seen too
    before = snapshot(tmp_path, work)

    with caplog.at_level(logging.WARNING, logger="mlbridge.corpus"):
        failures = compile_corpus(path.parent, work)
    after = snapshot(tmp_path, work)
    # The victim, sourced: the assembler name would run `touch PWNED`.
    subprocess.run(["sh", str(victim)], cwd=shell, capture_output=True, timeout=60)

    assert victim.read_text() == VICTIM_TEXT
    assert not (shell / "PWNED").exists()
    assert after == before, sorted(set(after.items()) ^ set(before.items()))
    assert list(aimed.iterdir()) == []
    assert failures == []
    reports = [r for r in caplog.records if r.name == "mlbridge.corpus"]
    assert len(reports) == 1  # once per corpus, not once per entry
    message = reports[0].getMessage()
    assert str(path) in message and "allow-list" in message
    for name, count in EXPECTED_DROPPED.items():
        assert f"{name} ({count})" in message
    assert str(aimed) not in message and "victim" not in message  # names, no values


def test_read_compdb_says_what_it_kept_and_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, _, _ = make_hostile_compdb(tmp_path)
    with caplog.at_level(logging.WARNING, logger="mlbridge.corpus"):
        database = compdb.read_compdb(path)
    assert not caplog.records  # read_compdb reports nothing: compdb_programs does
    assert {p.name: p.flags for p in database.programs} == expected_flags(path.parent)
    assert dict(database.dropped) == EXPECTED_DROPPED
    assert database.dropped_summary(most=2) == "-MD (1), -MF (1), and 18 more"
    # load_corpus (the loop's and the gym's way) keeps the same flags, and reports once.
    with caplog.at_level(logging.WARNING, logger="mlbridge.corpus"):
        assert load_corpus(path) == database.programs
    assert len(caplog.records) == 1


def test_relative_database_paths_give_absolute_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A source named like an option must never be read as one by clang.
    (tmp_path / "-fplugin=x").mkdir()
    (tmp_path / "-fplugin=x" / "a.c").write_text(PLAIN_SOURCE)
    entries = [{"directory": ".", "file": "-fplugin=x/a.c", "command": "cc -c -fplugin=x/a.c"}]
    (tmp_path / "compile_commands.json").write_text(json.dumps(entries))
    monkeypatch.chdir(tmp_path)
    (program,) = compdb.compdb_programs(Path("compile_commands.json"))
    assert program.sources == (tmp_path / "-fplugin=x" / "a.c",) and program.flags == ()


# --- an MLGO corpus: its recorded options reach no command line -----------------------


@needs_clang
def test_an_mlgo_corpus_s_recorded_options_are_not_used(tmp_path: Path) -> None:
    from mlbridge.problems.inlining.toolchain import compile_program

    corpus, work = tmp_path / "corpus", tmp_path / "work"
    corpus.mkdir()
    source = tmp_path / "a.c"
    source.write_text(PWN_SOURCE.replace('#include "config.h"\n', "#define FLAG 1\n"))
    subprocess.run(
        [CLANG, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c", str(source),
         "-o", str(corpus / "a.bc")],
        check=True,
    )  # fmt: skip
    victim = tmp_path / "victim.sh"
    victim.write_text(VICTIM_TEXT)
    hostile: Sequence[str] = (
        "-cc1", f"-foptimization-record-file={victim}", "-opt-record-file", str(victim),
        "-load", "/nonexistent/plugin.so", "-mllvm", f"-pass-remarks-output={victim}",
    )  # fmt: skip
    (corpus / "a.cmd").write_bytes("\0".join(hostile).encode())
    description = {"has_thinlto": False, "modules": ["a"]}
    for override in (None, list(hostile)):
        if override is not None:
            description["global_command_override"] = override
        (corpus / "corpus_description.json").write_text(json.dumps(description))
        (program,) = load_corpus(corpus)
        assert program.flags == ()
        compile_program(program, work)
        assert victim.read_text() == VICTIM_TEXT

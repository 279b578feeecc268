"""mlbridge.corpus: every format from small real fixtures (C files and
bitcode, a compile_commands.json, an MLGO corpus made the way extract_ir
makes one, tools/fetch_corpus.py's layout), each compiled by the loop's
toolchain; the split; every malformed input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest

from mlbridge import cli
from mlbridge.corpus import (
    HELD_OUT,
    TRAIN,
    CorpusError,
    Program,
    detect,
    files,
    hash_split,
    load_corpus,
    split,
)
from mlbridge.corpus.compdb import kept_flags
from mlbridge.corpus.program import VALIDATION
from mlbridge.corpus.split import VALIDATION_FRACTION, set_aside_validation
from mlbridge.errors import MlbridgeError

CLANG, OBJCOPY, SIZE = "clang-19", "llvm-objcopy-19", "llvm-size-19"
needs_clang = pytest.mark.skipif(
    shutil.which(CLANG) is None or shutil.which(SIZE) is None,
    reason=f"{CLANG} and {SIZE} are needed (scripts/setup installs them)",
)
needs_lld = pytest.mark.skipif(
    not (shutil.which(CLANG) and shutil.which("ld.lld-19")), reason="needs clang-19 and lld-19"
)
needs_objcopy = pytest.mark.skipif(
    shutil.which(CLANG) is None or shutil.which(OBJCOPY) is None,
    reason=f"{CLANG} and {OBJCOPY} make an MLGO corpus (scripts/setup installs them)",
)

#: A function worth inlining and a caller, in every fixture.
BODY = "static int sq(int x) { return x * x; }\nint %s(int y) { return sq(y) + %s; }\n"


def write(root: Path, texts: Dict[str, str]) -> Path:
    for name, text in texts.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def names(programs: List[Program]) -> List[str]:
    return [p.name for p in programs]


def compile_sizes(programs: List[Program], out: Path) -> Dict[str, int]:
    """``.text`` bytes of each program, compiled by the loop's toolchain."""
    from mlbridge.problems.inlining.toolchain import compile_all

    return {r.program: r.text_bytes for r in compile_all(programs, out, jobs=2)}


def run(*command: Any, cwd: Path) -> None:
    subprocess.run([str(c) for c in command], cwd=cwd, check=True, capture_output=True)


def make_mlgo(root: Path, modules: Dict[str, str]) -> Path:
    """An MLGO corpus the way extract_ir makes one: objects compiled with
    embedded bitcode and command line, the two sections dumped, the
    description written."""
    build = root / "build"
    corpus = root / "corpus"
    for module, text in modules.items():
        source = write(build, {f"{module}.c": text}) / f"{module}.c"
        obj = build / f"{module}.o"
        run(CLANG, "-O0", "-Xclang", "-fembed-bitcode=all", "-c", source, "-o", obj, cwd=build)
        (corpus / module).parent.mkdir(parents=True, exist_ok=True)
        run(
            OBJCOPY,
            f"--dump-section=.llvmbc={corpus / module}.bc",
            f"--dump-section=.llvmcmd={corpus / module}.cmd",
            obj,
            cwd=build,
        )
    description = {"has_thinlto": False, "modules": list(modules)}
    (corpus / "corpus_description.json").write_text(json.dumps(description))
    return corpus


# --- a directory of C files and bitcode ---------------------------------------------


@needs_clang
def test_a_directory_of_c_files_and_bitcode_compiles(tmp_path: Path) -> None:
    corpus = write(
        tmp_path / "corpus",
        {
            "a.c": BODY % ("a", "1"),
            "lib/x.c": '#include "x.h"\n' + BODY % ("x", "X"),
            "lib/x.h": "#define X 3\n",
            "lib/y.c": BODY % ("y", "2"),
            "notes.txt": "",
            ".hidden.c": "not C",
        },
    )
    ir = write(tmp_path / "ir", {"b.c": BODY % ("b", "4"), "c.c": BODY % ("c", "5")})
    run(CLANG, "-Oz", "-Xclang", "-disable-llvm-passes", "-c", "-emit-llvm", "b.c", cwd=ir)
    run(CLANG, "-Oz", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", "c.c", cwd=ir)
    shutil.copy(ir / "b.bc", corpus / "b.bc")
    shutil.copy(ir / "c.ll", corpus / "c.ll")
    shutil.copy(ir / "c.ll", corpus / "lib" / "z.ll")
    assert detect(corpus)[0] == "directory"
    programs = load_corpus(corpus)
    assert names(programs) == ["a.c", "b.bc", "c.ll", "lib"]
    assert [s.name for s in programs[-1].sources] == ["x.c", "y.c", "z.ll"]
    assert programs[-1].flags == (f"-I{corpus / 'lib'}",)
    assert {p.split for p in programs} == {TRAIN, HELD_OUT}
    sizes = compile_sizes(programs, tmp_path / "out")
    assert set(sizes) == set(names(programs)) and all(s > 0 for s in sizes.values())
    assert programs[1].lines == 0 and programs[2].lines > 0  # bitcode has no lines


# --- compile_commands.json ----------------------------------------------------------


def make_compdb(root: Path) -> Path:
    """Three entries, both command forms, relative directories; each source
    needs its kept flags to compile (#error otherwise)."""
    write(
        root,
        {
            "src/main.c": '#include "config.h"\n#if !FOO\n#error\n#endif\n' + BODY % ("m", "1"),
            "src/include/config.h": "#define FROM_HEADER 1\n",
            "src/util/util.c": "#ifndef MSG\n#error\n#endif\nconst char *msg = MSG;\n"
            + BODY % ("u", "2"),
            "src/util/asm.S": "",
            "src/other.c": "#if __STDC_VERSION__ != 199901L\n#error\n#endif\n" + BODY % ("o", "3"),
        },
    )
    build = root / "build"
    build.mkdir()
    entries = [
        {
            "directory": "build",  # relative to the compile_commands.json
            "file": "../src/main.c",
            "arguments": [
                "/usr/bin/cc",
                "-I../src/include",
                "-DFOO=1",
                "-O2",
                "-g",
                "-Wall",
                "-MD",
                "-MF",
                "main.d",
                "-c",
                "../src/main.c",
                "-o",
                "main.o",
                "-fno-strict-aliasing",
                "-fplugin=/evil.so",
                "-mllvm",
                "-inline-threshold=0",
                "-Xclang",
                "-ast-dump",
            ],
        },  # fmt: skip
        {
            "directory": str(root / "src"),
            "file": "util/util.c",
            "command": 'ccache cc -c -O3 -DMSG="\\"hi there\\"" -isystem include util/util.c '
            "-o util.o",
        },
        {"directory": "src", "file": "util/asm.S", "command": "cc -c util/asm.S -o asm.o"},
        {
            "directory": ".",
            "file": "src/other.c",
            "command": "cc -std=c99 -c src/other.c -o other.o",
        },
        # The same file twice: its first entry counts.
        {"directory": ".", "file": "src/other.c", "command": "cc -std=c11 -c src/other.c"},
    ]
    path = root / "compile_commands.json"
    path.write_text(json.dumps(entries))
    return path


def test_compile_commands_flags(tmp_path: Path) -> None:
    path = make_compdb(tmp_path)
    programs = {p.name: p for p in load_corpus(path)}
    assert list(programs) == ["main.c", "util/util.c", "other.c"]  # relative to src/
    assert programs["main.c"].sources == (tmp_path / "src" / "main.c",)
    assert programs["main.c"].flags == (
        f"-I{tmp_path / 'src' / 'include'}",
        "-DFOO=1",
        "-fno-strict-aliasing",
    )
    assert programs["util/util.c"].flags == (
        '-DMSG="hi there"',
        "-isystem",
        str(tmp_path / "src" / "include"),
    )
    assert programs["other.c"].flags == ("-std=c99",)
    # The directory holding it is read the same way.
    assert load_corpus(tmp_path) == list(programs.values())
    assert detect(tmp_path) == ("compile_commands", path)


def test_kept_flags_forms() -> None:
    here = Path("/w")
    assert kept_flags(
        ["cc", "-I", "inc", "-D", "A", "-U", "B", "-x", "c", "-include", "pre.h", "-target",
         "x86_64-linux-gnu", "--sysroot", "root", "-march=native", "-pthread", "-MT", "x",
         "-fprofile-use=p", "-fpass-plugin=p.so", "-std=gnu11", "in.c", "-"],
        here,
    ) == (
        "-I/w/inc", "-DA", "-UB", "-x", "c", "-include", "/w/pre.h",
        "--target=x86_64-linux-gnu", "--sysroot=/w/root", "-march=native", "-pthread",
        "-std=gnu11",
    )  # fmt: skip


@needs_clang
def test_compile_commands_compile(tmp_path: Path) -> None:
    programs = load_corpus(make_compdb(tmp_path))
    sizes = compile_sizes(programs, tmp_path / "out")
    assert set(sizes) == set(names(programs)) and all(s > 0 for s in sizes.values())
    assert (tmp_path / "out" / "util%2Futil.c" / "util.o").is_file()


# --- the MLGO corpus layout ---------------------------------------------------------


@needs_objcopy
def test_an_mlgo_corpus_compiles(tmp_path: Path) -> None:
    corpus = make_mlgo(
        tmp_path, {"a": BODY % ("a", "1"), "lib/b": BODY % ("b", "2"), "c": BODY % ("c", "3")}
    )
    assert b"-cc1\0" in (corpus / "a.cmd").read_bytes()  # what extract_ir records
    programs = load_corpus(corpus)
    assert names(programs) == ["a", "lib/b", "c"]
    assert programs[1].sources == (corpus / "lib" / "b.bc",) and programs[1].flags == ()
    assert {p.split for p in programs} == {TRAIN, HELD_OUT}
    assert load_corpus(corpus / "corpus_description.json") == programs
    if shutil.which(SIZE):
        sizes = compile_sizes(programs, tmp_path / "out")
        assert set(sizes) == set(names(programs)) and all(s > 0 for s in sizes.values())


#: Two modules of one program: a.c calls helper(), defined in b.c.
THIN_SOURCES = {
    "a": "int helper(int);\nint main(int argc, char **argv) { return helper(argc) + 1; }\n",
    "b": "int helper(int x) { return x * 3 + 1; }\nint unused(int x) { return helper(x) - 7; }\n",
}


def make_thinlto_mlgo(root: Path) -> Path:
    """A ThinLTO corpus the way ml-compiler-opt's ``extract_ir
    --thinlto_build=local`` makes one: a -flto=thin build linked by lld with
    --save-temps=import and --thinlto-emit-index-files, each module's
    post-import bitcode and index copied."""
    build, corpus = root / "build", root / "corpus"
    write(build, {f"{m}.c": text for m, text in THIN_SOURCES.items()})
    for module in THIN_SOURCES:
        run(CLANG, "-Oz", "-flto=thin", "-c", f"{module}.c", "-o", f"{module}.o", cwd=build)
    run(CLANG, "-fuse-ld=lld", "-flto=thin", "-Wl,--save-temps=import",
        "-Wl,--thinlto-emit-index-files", "a.o", "b.o", "-o", "prog", cwd=build)  # fmt: skip
    for module in THIN_SOURCES:
        write(corpus, {f"{module}.cmd": "-cc1\0-Oz\0"})
        shutil.copy(build / f"{module}.o.3.import.bc", corpus / f"{module}.bc")
        shutil.copy(build / f"{module}.o.thinlto.bc", corpus / f"{module}.thinlto.bc")
    description = {"has_thinlto": True, "modules": list(THIN_SOURCES)}
    (corpus / "corpus_description.json").write_text(json.dumps(description))
    return corpus


@needs_lld
def test_a_thinlto_mlgo_corpus_compiles_with_cross_module_inlining(tmp_path: Path) -> None:
    from mlbridge.problems.inlining.search import compile_with_flips

    corpus = make_thinlto_mlgo(tmp_path)
    a, b = load_corpus(corpus)
    index = (corpus / "a.thinlto.bc").absolute()
    assert a.sources == (corpus / "a.bc",)
    assert a.flags == (f"-fthinlto-index={index}", "-mllvm", "-thinlto-assume-merged")
    sizes = compile_sizes([a, b], tmp_path / "out")
    assert sizes["a"] > 0 and sizes["b"] > 0
    # helper(), defined in b, was imported into a: its call is a question
    # of a's inliner, and answering no keeps a call that -Oz inlines.
    inlined = compile_with_flips(a.sources[0], a.flags, frozenset(), tmp_path)
    assert inlined.questions == 1 and inlined.decisions[0] == 1
    kept = compile_with_flips(a.sources[0], a.flags, frozenset({0}), tmp_path)
    assert kept.decisions[0] == 0 and kept.text_bytes != inlined.text_bytes


@needs_lld
def test_a_plugin_clang_does_not_load_is_an_error_not_llvms_decisions(tmp_path: Path) -> None:
    """clang-19 loads no pass plugin into a distributed ThinLTO backend: a
    deployment measured there would be LLVM's decisions under the model's name."""
    from mlbridge.llvm.plugin_settings import InlinePluginSettings
    from mlbridge.native import NativeError, plugin_path
    from mlbridge.problems.inlining.toolchain import Plugin, compile_program
    from mlbridge.runner_config import RunnerConfig

    try:
        plugin = plugin_path()
    except NativeError as err:
        pytest.skip(f"no plugin: {err}")
    a, _ = load_corpus(make_thinlto_mlgo(tmp_path))
    echo = Plugin(
        plugin,
        InlinePluginSettings(RunnerConfig(kind="echo", argument="inlining_default")).environment(),
    )
    with pytest.raises(MlbridgeError, match="served 0 of 1 modules.*ThinLTO"):
        compile_program(a, tmp_path / "out", echo, jobs=1)
    plain = Program("plain", (tmp_path / "build" / "b.c",), (), TRAIN)  # unused() calls helper()
    assert compile_program(plain, tmp_path / "plain", echo, jobs=1).deciding == 1


def fake_mlgo(root: Path, description: Any, modules: Sequence[str] = ("a",)) -> Path:
    for module in modules:
        write(root, {f"{module}.bc": "BC", f"{module}.cmd": "-cc1\0-O2\0"})
    text = description if isinstance(description, str) else json.dumps(description)
    (root / "corpus_description.json").write_text(text)
    return root


def test_an_mlgo_description_without_a_corpus_reads_its_cmd_files(tmp_path: Path) -> None:
    corpus = fake_mlgo(tmp_path, {"has_thinlto": False, "modules": ["a", "d/b"]}, ["a", "d/b"])
    assert names(load_corpus(corpus)) == ["a", "d/b"]
    override = {"modules": ["a"], "global_command_override": ["-O2"]}  # has_thinlto optional
    assert names(load_corpus(fake_mlgo(tmp_path, override))) == ["a"]


@pytest.mark.parametrize(
    "description, message",
    [
        ({"has_thinlto": True, "modules": ["a"]}, r"module 'a': .*a\.thinlto\.bc does not exist"),
        ({"has_thinlto": "no", "modules": ["a"]}, '"has_thinlto" must be true or false'),
        ({"modules": []}, '"modules" is empty'),
        ({"has_thinlto": False}, '"modules" must be a list of strings'),
        ({"modules": "a"}, '"modules" must be a list of strings'),
        ({"modules": ["a", 1]}, '"modules" must be a list of strings'),
        ({"modules": ["a", "a"]}, "a module is listed twice"),
        ({"modules": ["a"], "global_command_override": "-O2"}, "global_command_override"),
        ({"modules": ["../a"]}, "'../a' leaves the corpus directory"),
        ({"modules": ["d/../../a"]}, "leaves the corpus directory"),
        ({"modules": ["/etc/passwd"]}, "'/etc/passwd' is not a relative path"),
        ({"modules": [""]}, "is not a relative path"),
        ({"modules": ["missing"]}, r"module 'missing': .*missing\.bc does not exist"),
        ([], "expected a JSON object"),
        ("{", "invalid JSON"),
        ("[" * 600 + "]" * 600, "nested deeper"),
    ],
)
def test_a_malformed_mlgo_corpus(tmp_path: Path, description: Any, message: str) -> None:
    corpus = fake_mlgo(tmp_path / "corpus", description)
    write(tmp_path, {"a.bc": "", "a.cmd": ""})  # what ../a would find
    with pytest.raises(CorpusError, match=message) as caught:
        load_corpus(corpus)
    assert str(corpus / "corpus_description.json") in str(caught.value)


def test_mlgo_missing_cmd_symlinks_and_size_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = fake_mlgo(tmp_path / "corpus", {"modules": ["a"]})
    (corpus / "a.cmd").unlink()
    with pytest.raises(CorpusError, match=r"a\.cmd does not exist"):
        load_corpus(corpus)
    corpus = fake_mlgo(tmp_path / "c2", {"modules": ["out/a"]})
    write(tmp_path, {"outside/a.bc": "", "outside/a.cmd": ""})
    os.symlink(tmp_path / "outside", corpus / "out")
    with pytest.raises(CorpusError, match="leaves the corpus directory"):
        load_corpus(corpus)
    corpus = fake_mlgo(tmp_path / "c3", {"modules": ["a"]})
    monkeypatch.setattr(files, "MAX_JSON_BYTES", 10)
    with pytest.raises(CorpusError, match="larger than 10 bytes"):
        load_corpus(corpus)
    monkeypatch.setattr(files, "MAX_JSON_BYTES", 1000)
    (corpus / "a.cmd").write_bytes(b"x" * 2000)
    monkeypatch.setattr("mlbridge.corpus.mlgo.MAX_CMD_BYTES", 1000)
    with pytest.raises(CorpusError, match=r"a\.cmd: larger than 1000 bytes"):
        load_corpus(corpus)


@pytest.mark.parametrize(
    "entries, message",
    [
        ({"file": "a.c"}, "expected a JSON array of entries"),
        ([], "no C or C\\+\\+ translation unit"),
        ([1], "entry 0: expected an object, got int"),
        ([{"directory": ".", "command": "cc a.c"}], '"directory" and "file" must be strings'),
        ([{"directory": 1, "file": "a.c", "command": "cc"}], '"directory" and "file"'),
        ([{"directory": ".", "file": "a.c"}], 'neither "arguments" nor "command"'),
        ([{"directory": ".", "file": "a.c", "arguments": "cc a.c"}], '"arguments" must be'),
        ([{"directory": ".", "file": "a.c", "arguments": ["cc", 1]}], '"arguments" must be'),
        ([{"directory": ".", "file": "a.c", "command": ["cc"]}], '"command" must be a string'),
        ([{"directory": ".", "file": "a.c", "command": "cc 'a.c"}], "cannot be split"),
        ([{"directory": ".", "file": "a\u0000.c", "command": "cc"}], "a NUL character"),
        ([{"directory": ".", "file": "gone.c", "command": "cc"}], "gone.c does not exist"),
        ([{"directory": ".", "file": "a.S", "command": "cc"}], "no C or C\\+\\+"),
        ("[1,", "invalid JSON"),
    ],
)
def test_a_malformed_compile_commands(tmp_path: Path, entries: Any, message: str) -> None:
    write(tmp_path, {"a.c": "", "a.S": ""})
    path = tmp_path / "compile_commands.json"
    path.write_text(entries if isinstance(entries, str) else json.dumps(entries))
    with pytest.raises(CorpusError, match=message) as caught:
        load_corpus(path)
    assert str(path) in str(caught.value)


def test_what_is_not_a_corpus(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "none")
    write(tmp_path, {"x.json": "[]", "empty/README": ""})
    with pytest.raises(CorpusError, match="but none of mlbridge_corpus.json, compile_commands"):
        load_corpus(tmp_path / "x.json")
    with pytest.raises(CorpusError, match="no C programs in"):
        load_corpus(tmp_path / "empty")
    assert issubclass(CorpusError, MlbridgeError)


# --- tools/fetch_corpus.py's layout and the split -----------------------------------


def test_the_fetched_layout_keeps_its_fixed_split(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lz4/lz4libs/lz4.c": "",
            "lz4/lz4libs/lz4hc.c": "",
            "xxhash/deps/xxhash/xxhash.c": "",
            "brotli/c/enc/encode.c": "",
            "brotli/c/common/dictionary.c": "",
            "brotli/c/dec/decode.c": "",
            "brotli/c/tools/brotli.c": "",
            "zstd/zstd/zstd.c": "",
            "sqlite3.c": "",
        },
    )
    assert detect(tmp_path)[0] == "fetched"
    full = load_corpus(tmp_path)
    assert names(split(full, TRAIN)) == ["lz4", "brotli-enc"]
    assert names(split(full, HELD_OUT)) == ["xxhash", "brotli-dec", "zstd", "sqlite3"]
    assert [s.name for s in full[0].sources] == ["lz4.c", "lz4hc.c"]
    assert [s.name for s in full[3].sources] == ["decode.c", "brotli.c"]
    assert full[-1].flags == ("-DSQLITE_OMIT_LOAD_EXTENSION", "-DSQLITE_THREADSAFE=0")
    assert names(load_corpus(tmp_path, quick=True)) == ["lz4", "xxhash"]


def test_the_split_by_name() -> None:
    assert hash_split(["only"]) == {"only": HELD_OUT}
    for count in range(2, 30):
        programs = [f"dir/p{i}.c" for i in range(count)]
        splits = hash_split(programs)
        assert set(splits.values()) == {TRAIN, HELD_OUT}
        assert hash_split(list(reversed(programs))) == splits  # order does not matter


def test_a_corpus_without_validation_programs_sets_a_stable_share_of_training_aside() -> None:
    made = [Program(f"src/p{i}.c", (Path(f"p{i}.c"),), (), TRAIN) for i in range(200)]
    made.append(Program("src/t.c", (Path("t.c"),), (), HELD_OUT))
    resplit = set_aside_validation(made)
    validation = {p.name for p in resplit if p.split == VALIDATION}
    assert abs(len(validation) / 200 - VALIDATION_FRACTION) < 0.07
    assert [p.split for p in resplit][-1] == HELD_OUT  # held-out programs stay
    assert [replace(p, split=q.split) for p, q in zip(made, resplit)] == resplit
    # Stable: in any order, and a program keeps its side when others come.
    assert {p.name for p in set_aside_validation(made[::-1]) if p.split == VALIDATION} == validation
    fewer = set_aside_validation(made[:150])
    assert {p.name for p in fewer if p.split == VALIDATION} == {
        n for n in validation if int(n[5:-2]) < 150
    }
    # At least one, never all; a corpus that names validation programs is kept.
    two = set_aside_validation(made[:2])
    assert sorted(p.split for p in two) == sorted([TRAIN, VALIDATION])
    assert set_aside_validation(made[:1]) == made[:1]
    named = [replace(made[0], split=VALIDATION)] + made[1:5]
    assert set_aside_validation(named) == named
    # Programs to keep stay training and do not count.
    kept = {n for n in validation if int(n[5:-2]) < 100}
    rest = set_aside_validation(made, keep=kept)
    assert {p.name for p in rest if p.split == VALIDATION} == validation - kept


# --- mlbridge train inlining --method loop --corpus ---------------------------------


def test_loop_accepts_a_compile_commands_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_compdb(tmp_path)
    loop = ["train", "inlining", "--method", "loop", "--out", str(tmp_path / "out")]
    code = cli.main([*loop, "--corpus", str(path), "--tool", str(tmp_path / "none.so")])
    # Past the --corpus check: the missing plugin stops it.
    assert code == 4, capsys.readouterr().err
    assert "the plugin" in capsys.readouterr().err

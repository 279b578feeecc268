"""mlbridge.problems.phase_ordering.pipeline_wrapper: the CC/CXX of a real
build (make, CMake) that runs clang-19's front end, a pipeline in
mlbridge-phase-service and clang-19's -Oz code generation. With default<Oz>
every object is plain clang-19 -Oz's byte for byte; another pipeline builds
programs that still run; a service that fails leaves the unit to clang's
-Oz; other commands (linking, -E) pass through. Where mlbridge-pipeline-clang
is built, the same builds run through it (the wrappers as shell scripts),
with the same objects."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from compiler_plugins import installed_pipeline_clang

from mlbridge.problems.phase_ordering.pipeline_wrapper import (
    codegen_options,
    compile_and_link,
    one_object,
    write_pipeline_wrappers,
)

CLANG, CLANGXX = "clang-19", "clang++-19"

SOURCES = {
    "sum.c": (
        '#include "sum.h"\n'
        "int sum(const int *v, int n) { int s = 0; for (int i = 0; i < n; i++) s += v[i];"
        " return s; }\n"
    ),
    "sum.h": "int sum(const int *v, int n);\n",
    "names.cpp": (
        '#include <string>\nextern "C" int name_length(int c) {\n'
        '  static const std::string names[] = {"zero", "one", "two", "three"};\n'
        "  return c >= 0 && c < 4 ? (int)names[c].size() : -1; }\n"
    ),
    "main.c": (
        '#include <stdio.h>\n#include "sum.h"\nint name_length(int);\n'
        "int main(void) { int v[] = {1, 2, 3, 4}; "
        'printf("%d %d\\n", sum(v, 4), name_length(3)); return 0; }\n'
    ),
}
MAKEFILE = """\
OBJS = sum.o names.o main.o
prog: $(OBJS)
\t$(CXX) -o $@ $(OBJS)
%.o: %.c
\t$(CC) $(CFLAGS) -MD -c $< -o $@
%.o: %.cpp
\t$(CXX) $(CXXFLAGS) -c $<
"""
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.13)
project(tiny C CXX)
add_executable(prog sum.c names.cpp main.c)
"""
OUTPUT = b"10 5\n"


def _service():
    from mlbridge.native import NativeError, phase_service_path

    try:
        return str(phase_service_path())
    except NativeError as err:
        pytest.skip(f"no mlbridge-phase-service: {err}")


#: The two implementations of the wrappers: the Python one running the
#: service, and mlbridge-pipeline-clang.
IMPLEMENTATIONS = pytest.mark.parametrize("native", [False, True], ids=["python", "native"])


def _wrappers(directory: Path, native: bool, **what):
    """The wrappers of one implementation, running ``what``."""
    driver = installed_pipeline_clang() if native else None
    return write_pipeline_wrappers(
        directory, clang=CLANG, clangxx=CLANGXX, service=_service(), driver=driver, **what
    )


def _project(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, text in SOURCES.items():
        (root / name).write_text(text)
    (root / "Makefile").write_text(MAKEFILE)
    (root / "CMakeLists.txt").write_text(CMAKELISTS)
    return root


def _make(root: Path, cc: str, cxx: str) -> None:
    env = dict(os.environ, CC=cc, CXX=cxx, CFLAGS="-O2", CXXFLAGS="-O2")
    subprocess.run(["make", "-s"], cwd=root, env=env, check=True)


def _objects(root: Path):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*.o"))}


def test_the_command_split():
    assert one_object(["-O2", "-c", "a.c", "-o", "a.o"]) == (["-O2", "-c", "a.c"], "a.c", "a.o")
    assert one_object(["-c", "-Ifoo", "-I", "bar", "x/b.cpp"]) == (
        ["-c", "-Ifoo", "-I", "bar", "x/b.cpp"],
        "x/b.cpp",
        "b.o",
    )
    assert one_object(["-c", "-x", "c", "gen", "-oout.o"])[1:] == ("gen", "out.o")
    for args in (
        ["a.c", "-o", "a"],  # links
        ["-c", "a.c", "b.c"],  # two sources
        ["-E", "-c", "a.c"],
        ["-S", "-c", "a.c"],
        ["-c", "a.s"],
        ["-c", "-flto", "a.c"],
        ["-c", "-x", "assembler", "a.c"],
        ["-c", "-o"],
    ):
        assert one_object(args) is None, args
    assert codegen_options(
        ["-c", "-fPIC", "-DX", "-mllvm", "-x=1", "-march=x86-64-v2", "-g", "-I", "i", "a.c"]
    ) == ["-fPIC", "-mllvm", "-x=1", "-march=x86-64-v2", "-g"]


@IMPLEMENTATIONS
@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_default_oz_through_the_wrappers_is_plain_clang_oz_in_a_make_build(tmp_path, native):
    cc, cxx = _wrappers(tmp_path / "bin", native, pipeline="default<Oz>")
    wrapped = _project(tmp_path / "wrapped")
    _make(wrapped, cc, cxx)
    # The wrapper appends -Oz after the project's -O2; plain clang is given it
    # the same way to compare.
    reference = _project(tmp_path / "reference")
    _make(reference, *(str(_append_level(tmp_path / "ref-bin", c)) for c in (CLANG, CLANGXX)))
    assert _objects(wrapped) == _objects(reference)
    assert _objects(wrapped).keys() == {Path("sum.o"), Path("names.o"), Path("main.o")}
    assert subprocess.run([wrapped / "prog"], capture_output=True, check=True).stdout == OUTPUT
    # the dependency file names the object, as the project asked
    assert (wrapped / "sum.d").read_text().startswith("sum.o:")


def _append_level(directory: Path, compiler: str) -> Path:
    """A compiler that takes -Oz after the project's flags, as the wrapper does."""
    directory.mkdir(exist_ok=True)
    script = directory / Path(compiler).name
    script.write_text(f'#!/bin/sh\nexec {compiler} "$@" -Oz\n')
    script.chmod(0o755)
    return script


@IMPLEMENTATIONS
@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_a_cmake_build_with_another_pipeline_runs(tmp_path, native):
    cc, cxx = _wrappers(
        tmp_path / "bin", native, pipeline="default<Oz>,function(instcombine),default<Oz>"
    )
    source = _project(tmp_path / "src")
    build = tmp_path / "build"
    env = dict(os.environ, CC=cc, CXX=cxx)
    subprocess.run(
        ["cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
        env=env,
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        ["cmake", "--build", str(build)], env=env, capture_output=True, text=True, check=True
    )
    assert "pipeline failed" not in done.stderr
    assert len(_objects(build)) == 3
    assert subprocess.run([build / "prog"], capture_output=True, check=True).stdout == OUTPUT


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_a_failing_service_leaves_units_to_clangs_oz(tmp_path):
    broken = tmp_path / "broken-service"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    cc, cxx = write_pipeline_wrappers(
        tmp_path / "bin", clang=CLANG, clangxx=CLANGXX, service=str(broken), pipeline="default<Oz>"
    )
    wrapped = _project(tmp_path / "wrapped")
    env = dict(os.environ, CC=cc, CXX=cxx, CFLAGS="-O2", CXXFLAGS="-O2")
    done = subprocess.run(["make"], cwd=wrapped, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("the pipeline failed") == 3
    reference = _project(tmp_path / "reference")
    _make(reference, *(str(_append_level(tmp_path / "ref-bin", c)) for c in (CLANG, CLANGXX)))
    assert _objects(wrapped) == _objects(reference)
    with pytest.raises(ValueError):
        write_pipeline_wrappers(tmp_path / "x", clang=CLANG, clangxx=CLANGXX, service=str(broken))


def test_mlbridge_wrap_prints_the_compilers(tmp_path, capsys):
    from mlbridge.cli import main

    _service()
    assert main(["wrap", "--out", str(tmp_path / "w"), "--pipeline", "default<Oz>"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"CC={tmp_path / 'w' / 'mlbridge-pipeline-cc'}",
        f"CXX={tmp_path / 'w' / 'mlbridge-pipeline-c++'}",
    ]
    with pytest.raises(SystemExit) as exit_info:
        main(["wrap", "--out", str(tmp_path / "w")])  # neither --pipeline nor --runner
    assert exit_info.value.code == 2
    # --no-baseline is the runner's: a constant pipeline reads no observation
    wrap = ["wrap", "--out", str(tmp_path / "w"), "--pipeline", "default<Oz>", "--no-baseline"]
    assert main(wrap) == 2


def test_a_runner_that_reads_no_baseline_runs_with_no_baseline(tmp_path):
    counting, log = _counting_service(tmp_path)
    project = _project(tmp_path / "p")
    for no_baseline in (False, True):
        cc, _ = write_pipeline_wrappers(
            tmp_path / f"bin{no_baseline}",
            clang=CLANG,
            clangxx=CLANGXX,
            service=str(counting),
            runner="constant:0",
            max_steps=1,
            no_baseline=no_baseline,
        )
        subprocess.run([cc, "-c", "sum.c", "-o", "sum.o"], cwd=project, check=True)
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and all("--runner constant:0 --max-steps 1" in c for c in calls)
    assert ["--no-baseline" in c.split() for c in calls] == [False, True]


def _counting_service(tmp_path):
    """The phase service behind a script that logs its arguments, one line
    per run; the script and the log."""
    service = _service()
    log = tmp_path / "calls.log"
    counting = tmp_path / "counting-service"
    counting.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {service} "$@"\n')
    counting.chmod(0o755)
    return counting, log


def test_sources_compiled_and_linked_at_once_each_go_through_the_pipeline(tmp_path):
    counting, log = _counting_service(tmp_path)
    cc, cxx = write_pipeline_wrappers(
        tmp_path / "bin",
        clang=CLANG,
        clangxx=CLANGXX,
        service=str(counting),
        pipeline="default<Oz>",
    )
    project = _project(tmp_path / "p")
    (project / "two.c").write_text(
        '#include <stdio.h>\n#include "sum.h"\n'
        'int main(void) { int v[] = {5, 6}; printf("%d\\n", sum(v, 2)); return 0; }\n'
    )
    subprocess.run([cc, "-O2", "-I", ".", "sum.c", "two.c", "-o", "prog"], cwd=project, check=True)
    assert subprocess.run([project / "prog"], capture_output=True, check=True).stdout == b"11\n"
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and all("--pipeline default<Oz>" in c for c in calls)
    # one object each (-x c too), then linking objects alone (clang)
    subprocess.run([cc, "-c", "sum.c", "-o", "sum.o"], cwd=project, check=True)
    subprocess.run([cc, "-x", "c", "-c", "two.c", "-o", "two.o"], cwd=project, check=True)
    subprocess.run([cc, "sum.o", "two.o", "-o", "prog2"], cwd=project, check=True)
    assert len(log.read_text().splitlines()) == 4
    assert subprocess.run([project / "prog2"], capture_output=True, check=True).stdout == b"11\n"
    assert compile_and_link(["a.o", "b.o", "-o", "p"]) is None
    assert compile_and_link(["-O2", "a.c", "x.o", "-lm", "-o", "p"]) == (
        ["-O2", "-lm", "-c", "{source}", "-o", "{object}"],
        ["-O2", "{object:0}", "x.o", "-lm", "-o", "p"],
    )

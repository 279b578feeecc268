"""Real projects built by their own build systems and tested by their own
test suites, plainly and with a policy (mlbridge.validation.projects,
``mlbridge validate --recipe``), on tiny projects: a policy that breaks
semantics (``-ffast-math`` against a test of NaN) is caught as
``failed-with-policy`` with the command that runs the test again; a
candidate that does not build or whose plugin never wrote its statistics is
a finding; the compiler wrapper makes the build's level win over the
project's; the harnesses' results files are read per test; the sandbox
holds for a project whose build writes outside and reaches the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from compiler_plugins import installed_inline_plugin
from test_corpus_recipe import _archive, _project, _recipe, needs_tools
from test_corpus_sandbox import _listener

from mlbridge.corpus.recipe import BuildSpec, SuiteSpec, read_recipe
from mlbridge.errors import CorpusError
from mlbridge.llvm.versions import tools
from mlbridge.validation import Build, reference_build
from mlbridge.validation.compiler_wrapper import write_wrappers
from mlbridge.validation.projects import compare_tests, validate_projects
from mlbridge.validation.suites import suite_name, suite_results

CLANG = tools().clang

NUM_C = b"double ratio(double a, double b) { return a / b; }\n"
NAN_TEST_C = b"""#include <math.h>
double ratio(double a, double b);
static int is_nan(double x) { return isnan(x); }
int main(int argc, char **argv) { (void)argv; return is_nan(ratio(0.0, argc - 1.0)) ? 0 : 1; }
"""
SUM_TEST_C = b"""int main(void) {
  unsigned s = 0;
  for (int i = 0; i < 100; ++i) s += i;
  return s != 4950;
}
"""
CMAKE = b"""cmake_minimum_required(VERSION 3.13)
project(tiny C)
enable_testing()
add_library(num SHARED num.c)
add_executable(nan_test nan_test.c)
target_link_libraries(nan_test num)
add_test(NAME nan COMMAND nan_test)
add_executable(sum_test sum_test.c)
add_test(NAME sum COMMAND sum_test)
add_test(NAME always_fails COMMAND sh -c "exit 1")
"""
MAKEFILE = b"""all: prog
prog: num.o nan_test.o
\t$(CC) -o $@ $^
%.o: %.c
\t$(CC) -O2 $(EXTRA) -c -o $@ $<
check: prog
\t./prog
"""


def _cmake_project(directory: Path, name: str = "tiny") -> Dict:
    files = {
        "CMakeLists.txt": CMAKE,
        "num.c": NUM_C,
        "nan_test.c": NAN_TEST_C,
        "sum_test.c": SUM_TEST_C,
    }
    digest = _archive(directory / f"{name}.tar.gz", files)
    project = _project(name, "cmake", digest, split="test")
    project["tests"] = {"args": ["-DCMAKE_BUILD_TYPE=Release"], "timeout": 120}
    return project


def _make_project(directory: Path, name: str, check: str = "./prog", **variables: str) -> Dict:
    makefile = MAKEFILE.replace(b"\t./prog", b"\t" + check.encode())
    files = {"Makefile": makefile, "num.c": NUM_C, "nan_test.c": NAN_TEST_C}
    digest = _archive(directory / f"{name}.tar.gz", files)
    project = _project(name, "make", digest, split="test")
    args = [f"{key}={value}" for key, value in variables.items()]
    project["tests"] = {"args": args, "run": ["make", "check", *args], "timeout": 60}
    return project


def _validate(tmp_path: Path, projects: List[Dict], candidate: Build) -> Dict:
    recipe = read_recipe(str(_recipe(tmp_path, projects)))
    reference = reference_build("-Oz")
    return validate_projects(recipe.projects, reference, candidate, tmp_path / "out")


# -- the whole check ------------------------------------------------------------------


@needs_tools
def test_a_policy_that_breaks_semantics_fails_a_test_of_the_project(tmp_path):
    broken = Build("fast-math", (CLANG, "-Oz", "-ffast-math"), cxx=tools().clangxx)
    report = _validate(tmp_path, [_cmake_project(tmp_path)], broken)
    (project,) = report["projects"]
    assert project["status"] == "compared"
    assert project["tests"] == {
        "always_fails": "failed-both",
        "nan": "failed-with-policy",
        "sum": "passed",
    }
    (finding,) = report["findings"]
    assert finding["status"] == "failed-with-policy" and finding["test"] == "tiny: nan"
    assert "ctest --test-dir" in finding["reproduce"] and "-R '^nan$'" in finding["reproduce"]
    sizes = project["sizes"]
    assert sizes["reference"]["files"] == sizes["candidate"]["files"] == 3  # libnum, 2 tests
    assert sizes["reference"]["allocated"] > sizes["reference"]["text"] > 0
    assert any("libnum.so" in path for path in project["binaries"]["candidate"])


@needs_tools
def test_a_candidate_that_builds_the_same_passes_every_test(tmp_path):
    report = _validate(tmp_path, [_make_project(tmp_path, "same")], reference_build("-O1"))
    (project,) = report["projects"]
    assert project["status"] == "compared" and not report["findings"]
    assert project["tests"] == {"make check": "passed"}
    # The reference's -Oz was appended after the project's -O2 and won.
    log = (tmp_path / "out" / "projects" / "same" / "reference" / "log").read_text()
    assert "mlbridge-cc -O2" in log


@needs_tools
def test_a_candidate_that_does_not_build_or_fell_back_is_a_finding(tmp_path):
    projects = [_make_project(tmp_path, "p")]
    report = _validate(tmp_path, projects, Build("bad", (CLANG, "-Oz", "-fno-such-flag")))
    assert report["projects"][0]["status"] == "candidate-build-failed"
    assert [f["status"] for f in report["findings"]] == ["candidate-build-failed"]
    silent = Build("no plugin", (CLANG, "-Oz"), stats_variable="MLBRIDGE_INLINE_STATS")
    report = _validate(tmp_path, projects, silent)
    assert report["projects"][0]["status"] == "fallback"
    assert "wrote no statistics" in report["findings"][0]["detail"]


@needs_tools
def test_a_project_that_fails_plainly_is_left_out(tmp_path):
    report = _validate(
        tmp_path, [_make_project(tmp_path, "r", EXTRA="-include nowhere.h")], reference_build()
    )
    assert report["projects"][0]["status"] == "reference-build-failed"
    assert not report["findings"]


# -- the sandbox ----------------------------------------------------------------------


@needs_tools
def test_a_project_writing_outside_or_reaching_the_network_fails_and_writes_nothing(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    server, connected = _listener()
    port = server.getsockname()[1]
    reach = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\""
    try:
        projects = [
            _make_project(tmp_path, "writes", f"touch {outside}/planted; touch ../../planted"),
            _make_project(tmp_path, "reaches", reach),
        ]
        report = _validate(tmp_path, projects, reference_build("-Oz"))
    finally:
        server.close()
    assert [p["status"] for p in report["projects"]] == ["compared", "compared"]
    for project in report["projects"]:  # the suites failed in both builds
        assert project["tests"] == {"make check": "failed-both"}
    assert not list(outside.iterdir()) and not connected
    assert not (tmp_path / "out" / "projects" / "writes" / "planted").exists()


# -- the pieces -----------------------------------------------------------------------


def test_each_test_is_compared_by_its_outcomes():
    reference = {"a": "passed", "b": "passed", "c": "failed", "d": "failed", "e": "skipped"}
    reference["f"] = "passed"
    candidate = {"a": "passed", "b": "failed", "c": "failed", "d": "passed", "e": "passed"}
    candidate["g"] = "passed"
    assert suite_name(BuildSpec("cmake"), SuiteSpec(BuildSpec("cmake"))) == "ctest"
    assert compare_tests(reference, candidate) == {
        "a": "passed",
        "b": "failed-with-policy",
        "c": "failed-both",
        "d": "failed-plainly",
        "e": "skipped",
        "f": "missing-with-policy",
        "g": "missing-plainly",
    }


def test_the_wrapper_appends_the_builds_flags_and_environment(tmp_path):
    include = tmp_path / "include"
    include.mkdir()
    (include / "from_env.h").write_text("#define FROM_ENV 7\n")
    build = Build("x", (CLANG, "-Oz", "-DFROM_BUILD=2"), {"C_INCLUDE_PATH": str(include)})
    cc, cxx = write_wrappers(tmp_path / "w", build)
    source = tmp_path / "p.c"
    source.write_text(
        '#include <stdio.h>\n#include "from_env.h"\nint main(void) {\n'
        '#ifdef __OPTIMIZE_SIZE__\nprintf("size %d %d\\n", FROM_BUILD, FROM_ENV);\n#endif\n'
        "return 0; }\n"
    )
    subprocess.run(
        [cc, "-O2", "-DFROM_BUILD=1", "-w", str(source), "-o", str(tmp_path / "p")], check=True
    )
    ran = subprocess.run([str(tmp_path / "p")], capture_output=True, text=True)
    assert ran.stdout == "size 2 7\n"  # -Oz and -DFROM_BUILD=2 won; the header was found
    assert Path(cxx).name == "mlbridge-c++"
    assert oct(Path(cc).stat().st_mode & 0o777) == "0o755"


def test_the_wrapper_runs_the_compiler_under_the_builds_launcher(tmp_path):
    """A launcher (the interactive host) gets the compiler's whole command
    after its own arguments."""
    log = tmp_path / "launched"
    launcher = tmp_path / "launcher"
    launcher.write_text(f'#!/bin/sh\necho "$1" > {log}\nshift 2\nexec "$@"\n')
    launcher.chmod(0o755)
    build = Build("x", (CLANG, "-Oz"), launcher=(str(launcher), "--tag", "--"))
    cc, _ = write_wrappers(tmp_path / "w", build)
    source = tmp_path / "p.c"
    source.write_text("int main(void) { return 0; }\n")
    subprocess.run([cc, str(source), "-o", str(tmp_path / "p")], check=True)
    assert log.read_text() == "--tag\n" and (tmp_path / "p").is_file()
    assert build.argv([], ["p.c"], "p")[:4] == [str(launcher), "--tag", "--", CLANG]


def test_results_are_read_from_each_harness(tmp_path):
    build = tmp_path / "build"
    (build / "meson-logs").mkdir(parents=True)
    junit = (
        '<?xml version="1.0"?><testsuite><testcase name="ok" status="run"/>'
        '<testcase name="bad" status="fail"><failure message="x"/></testcase>'
        '<testcase name="off" status="notrun"><skipped/></testcase></testsuite>'
    )
    (build / "mlbridge-ctest.xml").write_text(junit)
    assert suite_results(BuildSpec("cmake"), tmp_path, build) == {
        "ok": "passed",
        "bad": "failed",
        "off": "skipped",
    }
    records = [{"name": "t1", "result": "OK"}, {"name": "t2", "result": "EXPECTEDFAIL"}]
    records += [{"name": "t3", "result": "TIMEOUT"}, {"name": "t3", "result": "SKIP"}]
    (build / "meson-logs" / "testlog.json").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n"
    )
    assert suite_results(BuildSpec("meson"), tmp_path, build) == {
        "t1": "passed",
        "t2": "passed",
        "t3": "failed",
        "t3 #2": "skipped",
    }
    tests = tmp_path / "src" / "tests"
    tests.mkdir(parents=True)
    (tests / "a.trs").write_text(":test-result: PASS\n:global-test-result: PASS\n")
    (tests / "b.trs").write_text(":test-result: PASS\n:test-result: FAIL\n")
    (tests / "c.trs").write_text(":test-result: SKIP\n")
    (tests / "d.trs").write_text("")
    assert suite_results(BuildSpec("autotools"), tmp_path / "src", build) == {
        "tests/a": "passed",
        "tests/b": "failed",
        "tests/c": "skipped",
        "tests/d": "failed",
    }


def test_a_results_file_with_entities_or_behind_a_link_is_refused(tmp_path):
    bomb = '<!DOCTYPE t [<!ENTITY a "aaaa">]><testsuite><testcase name="&a;"/></testsuite>'
    (tmp_path / "mlbridge-ctest.xml").write_text(bomb)
    with pytest.raises(CorpusError, match="document type"):
        suite_results(BuildSpec("cmake"), tmp_path, tmp_path)
    (tmp_path / "meson-logs").mkdir()
    os.symlink("/etc/passwd", tmp_path / "meson-logs" / "testlog.json")
    with pytest.raises(CorpusError, match="cannot read"):
        suite_results(BuildSpec("meson"), tmp_path, tmp_path)


def test_a_recipes_test_suite_is_checked(tmp_path):
    def recipe(tests: Dict, system: str = "cmake") -> Path:
        project = _project("p", system, "0" * 64)
        project["tests"] = tests
        return _recipe(tmp_path, [project])

    suite = read_recipe(str(recipe({"args": ["-DT=ON"], "timeout": 5}))).projects[0].tests
    assert suite is not None and suite.run == () and suite.timeout_s == 5
    assert suite.build == BuildSpec("cmake", ("-DT=ON",))
    other = {"system": "autotools", "autoreconf": True, "args": ["--enable-tests"]}
    suite = read_recipe(str(recipe(other))).projects[0].tests
    assert suite is not None and suite.build == BuildSpec(
        "autotools", ("--enable-tests",), "", True
    )
    for tests, system, message in (
        ({"args": []}, "make", "names the command"),
        ({"args": [], "timeout": 0}, "cmake", "positive number"),
        ({"args": [], "timeout": True}, "cmake", "positive number"),
        ({"args": ["a\nb"]}, "cmake", "expected matching"),
        ({"run": ["ctest"]}, "cmake", "missing key"),
        ({"args": [], "system": "scons"}, "cmake", "is not one of"),
    ):
        with pytest.raises(CorpusError, match=message):
            read_recipe(str(recipe(tests, system)))


def test_the_shipped_recipe_describes_at_least_five_test_suites():
    recipe = read_recipe("debian-c")
    described = [p for p in recipe.projects if p.tests is not None]
    assert len(described) >= 5
    assert all(p.split == "test" for p in described)


# -- the command ----------------------------------------------------------------------


@needs_tools
def test_the_cli_validates_a_project_with_the_shipped_model(tmp_path):
    from mlbridge.models import model_path

    installed_inline_plugin()
    recipe = _recipe(tmp_path, [_make_project(tmp_path, "m")])
    command = [sys.executable, "-m", "mlbridge", "validate", "inlining", "--recipe", str(recipe)]
    command += ["--policy", str(model_path("inlining-size")), "--out", str(tmp_path / "out")]
    done = subprocess.run(command + ["--project", "m"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "m: compared (passed 1)" in done.stdout
    report = json.loads((tmp_path / "out" / "projects.json").read_text())
    assert report["projects"][0]["decisions"] > 0 and not report["findings"]
    done = subprocess.run(command + ["--corpus", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "one of --corpus" in done.stderr

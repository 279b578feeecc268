"""mlbridge-pipeline-clang: clang-19 with the phase service's pipeline in one
process. Beyond the builds both wrappers run (test_pipeline_wrapper.py): a
runner's choice and its statistics, a failing runner left to default<Oz>,
the jobs it leaves to clang (assembler sources, -E, linking), compiling and
linking at once, and its usage errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from compiler_plugins import installed_pipeline_clang

from mlbridge.problems.phase_ordering.pipeline_wrapper import (
    STATS_VARIABLE,
    write_pipeline_wrappers,
)

SOURCE = (
    "#include <stdio.h>\n"
    "static int twice(int x) { return 2 * x; }\n"
    'int main(int argc, char **argv) { (void)argv; printf("%d\\n", twice(argc)); return 0; }\n'
)
ASSEMBLY = ".text\n.globl seven\nseven:\n  movl $7, %eax\n  ret\n"


@pytest.fixture(name="driver")
def _driver() -> str:
    return installed_pipeline_clang()


def _run(command, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
    )


def test_a_runner_chooses_each_unit_and_records_it(tmp_path, driver):
    (tmp_path / "a.c").write_text(SOURCE)
    cc, _ = write_pipeline_wrappers(
        tmp_path / "bin",
        clang="clang-19",
        clangxx="clang++-19",
        service=driver,
        runner="constant:0",
        max_steps=2,
        no_baseline=True,
        driver=driver,
    )
    stats = tmp_path / "stats.jsonl"
    done = _run([cc, "-c", "a.c", "-o", "a.o"], tmp_path, **{STATS_VARIABLE: str(stats)})
    assert done.returncode == 0, done.stderr
    record = json.loads(stats.read_text())
    assert record["runner"] == "constant:0"
    assert (record["decisions"], record["answered"], record["fallbacks"]) == (2, 2, 0)
    plain = _run(["clang-19", "-Oz", "-c", "a.c", "-o", "plain.o"], tmp_path)
    assert plain.returncode == 0
    # two steps of action 0 are not clang's -Oz pipeline
    assert (tmp_path / "a.o").read_bytes() != (tmp_path / "plain.o").read_bytes()


def test_a_failing_runner_leaves_the_unit_to_default_oz(tmp_path, driver):
    (tmp_path / "a.c").write_text(SOURCE)
    runner = f"aot:{tmp_path / 'missing.so'}"
    done = _run([driver, "--runner", runner, "--", "-Oz", "-c", "a.c", "-o", "a.o"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "falling back to default<Oz>" in done.stderr
    assert _run(["clang-19", "-Oz", "-c", "a.c", "-o", "plain.o"], tmp_path).returncode == 0
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "plain.o").read_bytes()


def test_what_it_leaves_to_clang_and_compiling_and_linking_at_once(tmp_path, driver):
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\nint seven(void);\nint main(void) { printf("%d\\n", seven()); }\n'
    )
    (tmp_path / "seven.s").write_text(ASSEMBLY)
    # sources and an assembler file compiled and linked in one command: the
    # C source takes the runner's choice (clang would compile it in a
    # process of its own), the assembler file is clang's
    stats = tmp_path / "stats.jsonl"
    chosen = [driver, "--runner", "constant:0", "--max-steps", "1", "--stats", stats, "--"]
    done = _run([*chosen, "-Oz", "main.c", "seven.s", "-o", "prog"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert _run([tmp_path / "prog"], tmp_path).stdout == "7\n"
    assert [json.loads(line)["unit"] for line in stats.read_text().splitlines()] == ["main.c"]
    run = [driver, "--pipeline", "default<Oz>", "--"]
    # preprocessing only, and a compile error reported as clang reports it
    done = _run([*run, "-E", "main.c"], tmp_path)
    assert done.returncode == 0 and "int seven(void);" in done.stdout
    (tmp_path / "bad.c").write_text("int f(void) { return missing; }\n")
    done = _run([*run, "-Oz", "-c", "bad.c"], tmp_path)
    assert done.returncode == 1 and "use of undeclared identifier 'missing'" in done.stderr
    assert not (tmp_path / "bad.o").exists()


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--pipeline", "default<Oz>"],  # no --
        ["--pipeline", "not-a-pass", "--"],
        ["--pipeline", "default<Oz>", "--runner", "constant:0", "--"],
        ["--pipeline", "default<Oz>", "--max-steps", "2", "--"],
        ["--runner", "constant:0", "--max-steps", "x", "--"],
        ["--runner", "nokind:0", "--"],
        ["--frobnicate", "--"],
    ],
)
def test_usage_errors_exit_2(tmp_path, driver, options):
    done = _run([driver, *options, "-c", "a.c"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("mlbridge-pipeline-clang: error:")


def test_mlbridge_wrap_writes_wrappers_that_run_it(tmp_path, driver, capsys):
    from mlbridge.cli import main

    out = tmp_path / "w"
    assert main(["wrap", "--out", str(out), "--runner", "constant:0", "--max-steps", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"CC={out / 'mlbridge-pipeline-cc'}"
    script = (out / "mlbridge-pipeline-c++").read_text()
    assert script.startswith("#!/bin/sh\n") and f"exec {driver} --runner constant:0" in script
    assert '-- --driver-mode=g++ "$@" -Oz' in script
    assert json.loads((out / "pipeline.json").read_text())["driver"] == driver


@pytest.mark.skipif(shutil.which("ldd") is None, reason="no ldd")
def test_it_loads_onnx_runtime_and_grpc_only_for_their_runners(tmp_path, driver):
    """It starts once per compilation: the large libraries of the onnx and
    grpc runner kinds come from the runner modules, opened on demand."""
    linked = subprocess.run(["ldd", driver], capture_output=True, text=True, check=True).stdout
    assert "onnxruntime" not in linked and "grpc" not in linked
    (tmp_path / "a.c").write_text(SOURCE)
    from mlbridge.models import model_path

    runner = f"onnx:{model_path('pipeline-size')}"
    stats = tmp_path / "stats.jsonl"
    command = [driver, "--runner", runner, "--max-steps", "1", "--no-baseline"]
    done = _run([*command, "--stats", stats, "--", "-Oz", "-c", "a.c"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(stats.read_text())["answered"] == 1

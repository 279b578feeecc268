"""The demo (examples/demo): it runs and compares both inliners, says why
without clang-19, and its policy exported as ONNX decides exactly like the
Python policy. tests/python/test_wheel_install.py runs it against the
installed wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
sys.path.insert(0, str(DEMO))

from demo_deploy import FEATURES, export_policy_onnx, write_cases  # noqa: E402
from demo_policy import policy  # noqa: E402


def _demo(env=None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        [sys.executable, str(DEMO / "demo.py")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 is not installed")
@pytest.mark.slow
def test_the_demo_compiles_every_bundled_program_both_ways():
    done = _demo()
    assert done.returncode == 0, done.stderr
    assert "expr.c" in done.stdout and "hashtable.c" in done.stdout
    assert "kernels.c" in done.stdout and ".text -Oz" in done.stdout


def test_the_demo_without_clang_says_why(tmp_path):
    done = _demo({**os.environ, "PATH": str(tmp_path)})
    assert done.returncode == 4
    assert done.stderr == "demo: clang-19 is not on PATH (Debian: apt-get install clang-19)\n"


def test_onnx_export_matches_the_python_policy(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    path = str(tmp_path / "p.onnx")
    export_policy_onnx(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for _ in range(2000):
        values = {
            "cost_estimate": int(rng.integers(-50, 60)),
            "callee_basic_block_count": int(rng.integers(0, 12)),
            "last_call_to_static_bonus": int(rng.integers(0, 2)) * 15000,
        }
        feed = {name: np.array([values[name]], np.int64) for name in FEATURES}
        expected = policy({k: v for k, v in feed.items()})
        assert int(session.run(None, feed)[0][0]) == expected, values


def test_cases_file_layout(tmp_path):
    write_cases([(1, 2, 3, 1), (4, 5, 6, 0)], str(tmp_path / "c.bin"))
    data = np.frombuffer((tmp_path / "c.bin").read_bytes(), np.int64)
    assert data.tolist() == [1, 2, 3, 1, 4, 5, 6, 0]

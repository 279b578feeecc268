"""The studies of examples/ (gcc_unroll, mlir_tiling): each searches,
fits a policy and deploys it through its plugin, on the kernels of every
split.

Apart from test_gcc_plugin.py and test_mlir_plugin.py, which scripts/test
runs against the sanitizer builds of the plugins (ctest gcc_plugin,
mlir_plugin): the studies use the installed plugins, so they run here, with
the rest of the Python suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_gcc_plugin import plugin as gcc_plugin
from test_mlir_plugin import plugin as mlir_plugin

from mlbridge.mlir import TILE_CHOICES

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["gcc_plugin", "mlir_plugin"]  # fixtures of the plugins' own tests


@pytest.mark.skipif(
    bool(os.environ.get("MLBRIDGE_GCC_PLUGIN")), reason="the study uses the installed plugin"
)
@pytest.mark.slow(seconds=21)
def test_the_unroll_study_searches_fits_and_deploys(gcc_plugin, tmp_path):
    """studies/gcc_unroll.py, a thin use of the GccUnroll environment: every
    factor keeps every kernel's result (the environment checks checksums),
    and the policy fitted on the training kernels decides every kernel's
    loops, reported per split. Times are printed, not asserted."""
    from mlbridge.gcc import FACTORS
    from mlbridge.problems.gcc_unroll import kernels as gcc_kernels

    results = tmp_path / "study.json"
    study = ROOT / "studies" / "gcc_unroll.py"
    command = [sys.executable, str(study), "--rounds", "1", "--calls", "20"]
    done = subprocess.run(
        [*command, "--json", str(results)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(results.read_text())
    assert len(data["kernels"]) == len(gcc_kernels.suite())
    assert {k["split"] for k in data["kernels"]} == {"train", "validation", "held-out"}
    chosen = {f for k in data["kernels"] for f in k["model_factors"]}
    assert all(k["model_factors"] for k in data["kernels"]) and chosen <= set(FACTORS)
    assert set(data["geomean_speedup_by_split"]) == {"train", "validation", "held-out"}
    assert "geometric mean speedup" in done.stdout


@pytest.mark.skipif(
    bool(os.environ.get("MLBRIDGE_MLIR_PLUGIN")), reason="the study uses the installed plugin"
)
@pytest.mark.slow(seconds=27)
def test_the_tiling_study_searches_fits_and_deploys(mlir_plugin, tmp_path):
    """studies/mlir_tiling.py, a thin use of the MlirTiling environment, on the
    first kernel of each split: every tiling keeps every kernel's result (the
    environment checks checksums), and the policy fitted on the training
    kernel decides every kernel's nests among TILE_CHOICES, reported per
    split. Times are printed, not asserted."""
    results = tmp_path / "study.json"
    study = ROOT / "studies" / "mlir_tiling.py"
    done = subprocess.run(
        [
            sys.executable,
            str(study),
            *("--rounds", "1", "--repeats", "1", "--per-split", "1"),
            *("--json", str(results)),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(results.read_text())
    assert sorted(k["split"] for k in data["kernels"]) == ["held-out", "train", "validation"]
    chosen = {tuple(s) for k in data["kernels"] for s in k["model_sizes"]}
    assert all(k["model_sizes"] for k in data["kernels"])
    assert chosen <= {tuple(row) for row in TILE_CHOICES.tolist()}
    assert data["runner_us"] > 0 and "geometric mean speedup" in done.stdout

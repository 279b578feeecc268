"""The ONNX checker (and the optional PyTorch export)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("onnx")

from mlbridge.onnx_tools import ModelCheckError, check_model, require_fit  # noqa: E402
from mlbridge.tensor_spec import TensorSpec  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_fitting_specs_pass(onnx_models):
    assert (
        check_model(
            str(onnx_models / "mlp.onnx"),
            [TensorSpec("x", "float", (1, 64)), TensorSpec("extra", "int64_t", (1,))],
            [TensorSpec("y", "float", (1, 1))],
        )
        == []
    )


def test_every_problem_is_named(onnx_models):
    problems = check_model(
        str(onnx_models / "two_io.onnx"),
        [TensorSpec("a", "int32_t", (1, 3)), TensorSpec("bb", "float", (1, 3))],
        [TensorSpec("sum", "float", (1, 4)), TensorSpec("advice", "int64_t", (1,))],
    )
    text = "\n".join(problems)
    assert "model input 'a' is int64_t, the spec says int32_t" in text
    assert "model input 'b' has no input spec" in text
    assert "output 'sum' has shape [1, 3]" in text
    assert "expects output 'advice'" in text
    with pytest.raises(ModelCheckError, match="'b'"):
        require_fit(
            str(onnx_models / "two_io.onnx"),
            [TensorSpec("a", "int64_t", (1, 3))],
            [TensorSpec("best", "int64_t", (1, 1))],
        )


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="no system Python")
@pytest.mark.slow
def test_export_torch_under_the_system_torch(tmp_path):
    """torch is optional: Debian's python3-torch lives under the system
    Python, so the helper is exercised there (with python3-onnx)."""
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import torch, onnx"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("python3-torch / python3-onnx not installed")
    script = (
        "import torch\n"
        "from mlbridge.onnx_tools import export_torch\n"
        "from mlbridge.tensor_spec import TensorSpec\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))\n"
        f"export_torch(m, {str(tmp_path / 'p.onnx')!r}, [TensorSpec('features', 'float', (1, 8))],"
        " [TensorSpec('logits', 'float', (1, 2))])\n"
    )
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", script],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert (
        check_model(
            str(tmp_path / "p.onnx"),
            [TensorSpec("features", "float", (1, 8))],
            [TensorSpec("logits", "float", (1, 2))],
        )
        == []
    )

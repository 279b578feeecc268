"""``--policy model.onnx``: ONNX onnx_models served from Python (onnxruntime)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from mlbridge.grpc_client import ModelClient  # noqa: E402
from mlbridge.grpc_server import start_server  # noqa: E402
from mlbridge.policies import PolicyError, load_policy  # noqa: E402
from mlbridge.tensor_spec import TensorSpec  # noqa: E402


def test_mlp_matches_the_numpy_reference(onnx_models):
    policy = load_policy(str(onnx_models / "mlp.onnx"))
    cases = np.frombuffer((onnx_models / "mlp.cases.bin").read_bytes(), np.float32)
    xs, ys = cases[: 200 * 64].reshape(200, 64), cases[200 * 64 :]
    got = np.array([policy({"x": x.reshape(1, 64)}).item() for x in xs], np.float32)
    assert np.max(np.abs(got - ys)) <= 1e-5


def test_served_over_grpc_with_two_outputs(onnx_models, tmp_path):
    running = start_server(load_policy(str(onnx_models / "two_io.onnx")), f"unix:{tmp_path}/m.sock")
    inputs = [TensorSpec("a", "int64_t", (1, 3)), TensorSpec("b", "float", (1, 3))]
    outputs = [TensorSpec("sum", "float", (1, 3)), TensorSpec("best", "int64_t", (1, 1))]
    try:
        with ModelClient(running.target, inputs, outputs) as client:
            got = client.evaluate(
                {"a": np.array([[1, 5, 2]], np.int64), "b": np.array([[0.5, -4, 0.25]], np.float32)}
            )
        assert got["best"].item() == 2
        assert np.allclose(got["sum"], [[1.5, 1.0, 2.25]])
    finally:
        running.stop(0)


def test_missing_or_corrupt_model_is_a_clear_error(tmp_path):
    with pytest.raises(PolicyError, match="missing.onnx: cannot read: No such file"):
        load_policy(str(tmp_path / "missing.onnx"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x7f" * 100)
    with pytest.raises(PolicyError, match="bad.onnx"):
        load_policy(str(bad))


def test_missing_feature_names_the_input(onnx_models):
    policy = load_policy(str(onnx_models / "mlp.onnx"))
    with pytest.raises(Exception, match="needs input 'x'"):
        policy({"features": np.zeros((1, 64), np.float32)})


def test_serve_refuses_a_fifo_as_the_model_at_once(tmp_path):
    """``--policy fifo.onnx`` is refused as not a regular file (the C++
    runners refuse it too); it once blocked the command forever."""
    import os
    import subprocess
    import sys

    from mlbridge.cli_errors import USAGE

    os.mkfifo(tmp_path / "fifo.onnx", 0o600)
    command = ["serve", "--pipe", str(tmp_path / "c"), "--create", "--policy"]
    done = subprocess.run(
        [sys.executable, "-m", "mlbridge", *command, str(tmp_path / "fifo.onnx")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == USAGE
    assert "fifo.onnx: cannot read: not a regular file" in done.stderr

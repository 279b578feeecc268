"""The demo policy exported as ONNX decides exactly like the Python policy."""

from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from mlbridge.demo.deploy import FEATURES, export_policy_onnx, write_cases  # noqa: E402
from mlbridge.demo.policy import policy  # noqa: E402


def test_onnx_export_matches_the_python_policy(tmp_path):
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

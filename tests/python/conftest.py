"""Fixtures shared by the Python tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def onnx_models(tmp_path_factory) -> Path:
    """The test models of tools/make_onnx_test_models.py (needs onnx)."""
    pytest.importorskip("onnx")
    out = tmp_path_factory.mktemp("onnx_models")
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_onnx_test_models.py"), str(out)], check=True
    )
    return out

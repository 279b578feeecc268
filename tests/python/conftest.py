"""Fixtures shared by the Python tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "slow: runs compilers, builds, trainings or studies for a second or more; "
        "scripts/test --quick leaves these out (-m 'not slow')",
    )


@pytest.fixture(scope="session")
def onnx_models(tmp_path_factory) -> Path:
    """The test models of tools/make_onnx_test_models.py (needs onnx)."""
    pytest.importorskip("onnx")
    out = tmp_path_factory.mktemp("onnx_models")
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_onnx_test_models.py"), str(out)], check=True
    )
    return out

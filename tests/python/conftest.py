"""Fixtures shared by the Python tests."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import List

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


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    """Files with the most ``slow`` tests first (a stable sort: the order of
    tests within a file is kept). ``pytest -n --dist loadfile`` hands files
    to workers in this order, so the long files start early and the short
    ones fill the gaps at the end instead of one long file running alone."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow") is not None)
    items.sort(key=lambda item: -slow[item.path])

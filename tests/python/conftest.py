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
        "slow(seconds=N): runs compilers, builds, trainings or studies for a second "
        "or more (N: about how many, on the 2-vCPU machine, when it is much more); "
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


def _cost(item: pytest.Item) -> float:
    """About how many seconds ``item`` takes: its ``slow`` marker's
    ``seconds``, 1 for another slow test, 0 for a fast one."""
    marker = item.get_closest_marker("slow")
    return 0.0 if marker is None else float(marker.kwargs.get("seconds", 1.0))


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    """The costliest files first (the seconds of their ``slow`` tests; a
    stable sort: the order of tests within a file is kept). ``pytest -n
    --dist loadfile`` hands files to workers in this order, so the long
    files start early and the short ones fill the gaps at the end instead
    of one long file (a single minute-long test included) running alone."""
    cost: Counter = Counter()
    for item in items:
        cost[item.path] += _cost(item)
    items.sort(key=lambda item: -cost[item.path])

"""The model variants of studies/decline_attribution.py answer as documented:
LLVM's decision on the side a variant defers, the model's elsewhere, and the
rule's declines at last calls to large static functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any, Dict

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "decline_attribution", ROOT / "studies" / "decline_attribution.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    return _tool()


@pytest.fixture(scope="module")
def shipped() -> Any:
    from mlbridge.models import model_file

    return onnx.load(str(model_file("inlining-size")))


def _run(session: Any, values: Dict[str, int]) -> int:
    feed: Dict[str, np.ndarray] = {}
    for spec in session.get_inputs():
        feed[spec.name] = np.array([values.get(spec.name, 40)], np.int64)
    return int(session.run(None, feed)[0][0])


def _answer(model: Any, **values: int) -> int:
    return _run(ort.InferenceSession(model.SerializeToString()), values)


# A call site where the shipped model declines LLVM's "inline" (found by
# search below), at a last call (callee_users 1) or not.
def _declined_site(model: Any, users: int) -> Dict[str, int]:
    rng = np.random.default_rng(0)
    session = ort.InferenceSession(model.SerializeToString())
    names = [s.name for s in session.get_inputs()]
    for _ in range(5000):
        values = {n: int(v) for n, v in zip(names, rng.integers(0, 300, len(names)))}
        values.update(callee_users=users, inlining_default=1, is_callee_linkonce_odr=0)
        if _run(session, values) == 0:
            return values
    raise AssertionError(f"the model declines no random call site with callee_users {users}")


def test_deferring_answers_llvm_on_its_side_only(tool: ModuleType, shipped: Any) -> None:
    at_last = _declined_site(shipped, users=1)
    elsewhere = _declined_site(shipped, users=3)
    defers_last = tool.deferring(shipped, at_last_call=True)
    defers_elsewhere = tool.deferring(shipped, at_last_call=False)
    assert _answer(defers_last, **at_last) == 1
    assert _answer(defers_last, **elsewhere) == 0
    assert _answer(defers_elsewhere, **at_last) == 0
    assert _answer(defers_elsewhere, **elsewhere) == 1
    # The model's metadata (its deference, its flag) stays.
    assert {p.key for p in defers_last.metadata_props} == {p.key for p in shipped.metadata_props}


def test_rule_declines_last_calls_to_large_functions(tool: ModuleType, shipped: Any) -> None:
    rule = tool.declining(shipped, 200, keep_model=False)
    assert not rule.metadata_props
    site = dict(callee_users=1, inlining_default=1, callee_basic_block_count=200)
    assert _answer(rule, **site) == 0
    assert _answer(rule, **{**site, "callee_basic_block_count": 199}) == 1
    assert _answer(rule, **{**site, "callee_users": 2}) == 1
    assert _answer(rule, **{**site, "inlining_default": 0, "callee_basic_block_count": 10}) == 0
    # Added to the model: the model's own declines stay.
    both = tool.declining(shipped, 200, keep_model=True)
    elsewhere = _declined_site(shipped, users=3)
    assert _answer(both, **elsewhere) == 0
    assert _answer(both, **site) == 0

"""The pieces of `mlbridge loop` that need no compiler: the imitation
policy (training, its ONNX form against numpy, under ONNX Runtime and
as a module compiled by mlbridge-aot), the evolution-strategies search on a synthetic
objective, progress lines and the summary. The whole loop on clang-19 runs
in tests/llvm/test_loop.py."""

from __future__ import annotations

import ctypes
import io
import shutil
from pathlib import Path
from typing import List

import numpy as np
import pytest

from mlbridge.aot.loadable import build_aot_module
from mlbridge.problems.inlining import DECISION, DEFAULT_FEATURE
from mlbridge.problems.inlining.imitation import (
    EXCLUDED,
    Dataset,
    Policy,
    signed_log,
    train_imitation,
)
from mlbridge.problems.inlining.loop import search
from mlbridge.problems.inlining.loop.report import Progress
from mlbridge.problems.inlining.loop.run import summary_markdown

NAMES = [
    "cost_estimate",
    "callee_users",
    "callsite_height",
    "node_count",
    "callee_basic_block_count",
]


def llvm_like_dataset(rows: int = 3000, seed: int = 1) -> Dataset:
    """Call sites whose decision is LLVM's -Oz rule as MLGO's features show
    it (inline iff cost_estimate <= 0), with features spanning the same
    orders of magnitude as real ones."""
    rng = np.random.default_rng(seed)
    cost = rng.integers(-400, 400, rows) * rng.integers(1, 30, rows)
    features = np.stack(
        [
            cost,
            rng.integers(1, 5000, rows),
            rng.integers(1, 40, rows),
            rng.integers(10, 100000, rows),
            rng.integers(0, 2, rows),
        ],
        axis=1,
    ).astype(np.int64)
    decisions = (cost <= 0).astype(np.int64)
    return Dataset(list(NAMES), features, decisions, ["synthetic"] * rows)


def flip_dataset(rows: int = 3000, seed: int = 2):
    """Call sites where flipping LLVM's decision pays (label 1) when it
    declined a callee with one user (inlining deletes it) or inlined a
    costly one; each row weighed by the bytes at stake."""
    rng = np.random.default_rng(seed)
    cost = rng.integers(-400, 400, rows) * rng.integers(1, 30, rows)
    users = rng.integers(1, 6, rows)
    default = (cost <= 0).astype(np.int64)
    features = np.stack(
        [cost, users, rng.integers(1, 40, rows), rng.integers(10, 100000, rows), default], axis=1
    ).astype(np.int64)
    flip = np.where(default == 0, users == 1, cost < -2000).astype(np.int64)
    weights = np.where(flip == 1, 20.0, 1.0).astype(np.float32)
    names = ["cost_estimate", "callee_users", "callsite_height", "node_count", DEFAULT_FEATURE]
    return Dataset(names, features, flip, ["synthetic"] * rows), weights


@pytest.fixture(scope="module")
def trained():
    return train_imitation(llvm_like_dataset(), epochs=60)


@pytest.fixture(scope="module")
def trained_flips():
    data, weights = flip_dataset()
    return train_imitation(
        data, hidden=(16,), epochs=60, weights=weights, flips=True, weight_decay=1e-3
    )


@pytest.fixture(params=["decides", "flips"])
def any_trained(request):
    return request.getfixturevalue("trained" if request.param == "decides" else "trained_flips")


def test_imitation_learns_the_rule_and_skips_excluded_features(trained):
    policy, curve = trained
    assert policy.names == [n for n in NAMES if n not in EXCLUDED]
    assert len(curve.loss) == 60 and curve.loss[-1] < curve.loss[0]
    assert curve.validation_agreement[-1] >= 0.98
    fresh = llvm_like_dataset(2000, seed=7)
    keep = [NAMES.index(n) for n in policy.names]
    agree = (policy.decide(fresh.features[:, keep]) == fresh.decisions).mean()
    assert agree >= 0.98


def test_a_residual_policy_flips_llvms_decision_where_flipping_pays(trained_flips):
    policy, curve = trained_flips
    assert policy.flips and DEFAULT_FEATURE in policy.names and "node_count" not in policy.names
    assert curve.loss[-1] < curve.loss[0]
    data, weights = flip_dataset(2000, seed=9)
    x = data.features[:, [data.names.index(n) for n in policy.names]]
    default = data.features[:, data.names.index(DEFAULT_FEATURE)]
    decided = policy.decide(x)
    assert set(np.unique(decided)) <= {0, 1}
    right = (decided != default) == data.decisions
    # Weighed by the bytes at stake, as it was trained.
    assert (right * weights).sum() / weights.sum() >= 0.95
    # Where it never fires, it is LLVM.
    quiet = policy.copy()
    quiet.layers[-1][1][1] -= 1e6
    assert np.array_equal(quiet.decide(x), default)


def test_a_residual_policy_needs_llvms_decision_and_weights_are_checked():
    with pytest.raises(ValueError, match=DEFAULT_FEATURE):
        Policy(["a"], np.zeros(1, np.float32), np.ones(1, np.float32), [], flips=True)
    data, weights = flip_dataset(50)
    with pytest.raises(ValueError, match="weights"):
        train_imitation(data, epochs=1, weights=weights[:-1], flips=True)
    with pytest.raises(ValueError, match="weights"):
        train_imitation(data, epochs=1, weights=weights * 0, flips=True)


def test_signed_log_is_odd_and_monotonic():
    x = np.asarray([-1000, -1, 0, 1, 1000], np.int64)
    y = signed_log(x)
    assert y.dtype == np.float32
    assert np.array_equal(y, -y[::-1]) and np.all(np.diff(y) > 0) and y[2] == 0


def raw_inputs(policy: Policy, rows: int, seed: int = 3) -> np.ndarray:
    """Raw int64 features, with zeros, negatives and outliers past CLIP."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-5000, 5000, (rows, len(policy.names)))
    x[::7] = 0
    x[1::11] = 10**9
    if DEFAULT_FEATURE in policy.names:
        x[:, policy.names.index(DEFAULT_FEATURE)] = rng.integers(0, 2, rows)
    return x.astype(np.int64)


def confident(policy: Policy, x: np.ndarray) -> np.ndarray:
    """Rows whose two logits differ by more than float32 rounding can move:
    there every runtime must decide as numpy does."""
    logits = policy.logits(x)
    mask = np.abs(logits[:, 1] - logits[:, 0]) > 1e-3
    assert mask.mean() > 0.95
    return mask


def test_onnx_form_decides_like_numpy_under_onnxruntime(any_trained, tmp_path: Path):
    ort = pytest.importorskip("onnxruntime")
    policy, _ = any_trained
    path = tmp_path / "policy.onnx"
    policy.to_onnx(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == policy.names
    assert [o.name for o in session.get_outputs()] == [DECISION]
    x = raw_inputs(policy, 500)
    got = np.asarray(
        [
            session.run(None, {n: row[i : i + 1] for i, n in enumerate(policy.names)})[0][0]
            for row in x
        ]
    )
    mask = confident(policy, x)
    assert np.array_equal(got[mask], policy.decide(x)[mask])


class AotTensor(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
    ]


class AotModel(ctypes.Structure):
    """mlbridge_aot_model_v1 (include/mlbridge/AotAbi.h)."""

    _fields_ = [
        ("abi_version", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("num_args", ctypes.c_int),
        ("num_results", ctypes.c_int),
        ("args", ctypes.POINTER(AotTensor)),
        ("results", ctypes.POINTER(AotTensor)),
        ("create", ctypes.CFUNCTYPE(ctypes.c_void_p)),
        ("destroy", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
        ("arg_data", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)),
        ("result_data", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)),
        ("set_arg_data", ctypes.c_void_p),
        ("set_result_data", ctypes.c_void_p),
        ("run", ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)),
    ]


@pytest.mark.skipif(shutil.which("c++") is None, reason="needs a C++ compiler")
def test_aot_module_decides_like_numpy(any_trained, tmp_path: Path):
    """The module the plugin loads (build_aot_module), driven through its C
    interface."""
    pytest.importorskip("onnx")
    policy, _ = any_trained
    path = tmp_path / "policy.onnx"
    policy.to_onnx(path)
    library = ctypes.CDLL(str(build_aot_module(path, tmp_path / "aot")))
    library.mlbridge_aot_model_v1_entry.restype = ctypes.POINTER(AotModel)
    model = library.mlbridge_aot_model_v1_entry().contents
    assert model.abi_version == 1 and model.name == b"InlinePolicy"
    assert [model.args[i].name.decode() for i in range(model.num_args)] == policy.names
    assert model.num_results == 1 and model.results[0].name.decode() == DECISION
    assert model.results[0].dtype == b"int64_t"
    x = raw_inputs(policy, 500)
    instance = model.create()
    try:
        inputs = [
            ctypes.cast(model.arg_data(instance, i), ctypes.POINTER(ctypes.c_int64))
            for i in range(model.num_args)
        ]
        output = ctypes.cast(model.result_data(instance, 0), ctypes.POINTER(ctypes.c_int64))
        got = []
        for row in x:
            for i, value in enumerate(row):
                inputs[i][0] = int(value)
            assert model.run(instance) is None
            got.append(output[0])
    finally:
        model.destroy(instance)
    mask = confident(policy, x)
    assert np.array_equal(np.asarray(got)[mask], policy.decide(x)[mask])


def synthetic_objective(target: np.ndarray, calls: List[int]):
    """A stand-in for compiling the training programs: the size ratio is
    1 + the mean squared distance of the output layer to ``target``."""

    def size_ratio(policy, programs, plugin, oz_text, work, jobs=2, plugin_env=None, llvm=None):
        calls.append(1)
        w, b = policy.layers[-1]
        theta = np.concatenate([w.reshape(-1), b]).astype(np.float64)
        return 1.0 + float(np.mean((theta - target) ** 2))

    return size_ratio


def test_evolution_strategies_descend_and_return_the_mean(trained, monkeypatch):
    policy, _ = trained
    w, b = policy.layers[-1]
    start = np.concatenate([w.reshape(-1), b]).astype(np.float64)
    scale = np.abs(start).mean()
    target = start + scale * np.sign(np.random.default_rng(5).standard_normal(start.size))
    calls: List[int] = []
    objective = synthetic_objective(target, calls)
    monkeypatch.setattr(search, "size_ratio", objective)
    start_ratio = objective(policy, [], Path("."), {}, Path("."))
    calls.clear()
    result, ratio, trace = search.evolve(
        policy, [], Path("unused.so"), {}, iterations=8, pairs=3, sigma=0.5
    )
    assert trace.evaluations == len(calls) == 1 + 8 * (2 * 3 + 1)
    assert len(trace.ratio) == len(trace.best_ratio) == 8
    # The result is the search's mean after the last step, measured as such.
    assert ratio == trace.ratio[-1] == objective(result, [], Path("."), {}, Path("."))
    assert ratio < start_ratio
    assert all(a >= b for a, b in zip(trace.best_ratio, trace.best_ratio[1:]))
    # Only the output layer moves; the feature transform is the imitation's.
    assert np.array_equal(result.mean, policy.mean)
    assert np.array_equal(result.scale, policy.scale)


def test_evolution_strategies_are_deterministic_for_a_seed(trained, monkeypatch):
    policy, _ = trained
    monkeypatch.setattr(search, "size_ratio", synthetic_objective(np.zeros(1), []))
    runs = [
        search.evolve(policy, [], Path("unused.so"), {}, iterations=2, seed=4) for _ in range(2)
    ]
    assert runs[0][1] == runs[1][1]
    assert np.array_equal(runs[0][0].layers[-1][0], runs[1][0].layers[-1][0])


def test_progress_lines_off_a_terminal():
    stream = io.StringIO()
    update = Progress(stream).step("deploy")
    update(0, 4, "oz sqlite3")
    update(1, 4, "skipped: within 5 s of the last line")
    update(4, 4, "")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("[deploy] 0/4 oz sqlite3  00:00 elapsed")
    assert lines[1].startswith("[deploy] 4/4")


def test_summary_tables():
    program = {
        "program": "zstd",
        "lines": 10,
        "oz_text": 1000,
        "es_text": 990,
        "aot": {"text_bytes": 1010, "agreed": 99, "compared": 100},
    }
    results = {
        "training": {
            "call_sites": 5,
            "features": ["a", "b"],
            "train_agreement": 1.0,
            "validation_agreement": 0.5,
        },
        "held_out": [program],
        "totals": {
            "oz": {"text_bytes": 1000, "cpu_seconds": 1.0},
            "aot": {"text_bytes": 1010, "cpu_seconds": 1.5, "agreement": 0.99, "fallbacks": 0},
        },
        "search": {"evaluations": 15, "ratio": [0.999, 0.998], "best_ratio": [0.997, 0.997]},
    }
    text = summary_markdown(results)
    assert "| zstd | 10 | 1000 | 1010 | 1.0100 | 0.9900 | 990 | 0.9900 |" in text
    assert "| aot | 1010 | 1.50 | 0.9900 | 0 |" in text
    assert "0.9980 under the resulting (mean) policy, 0.9970 under the best" in text

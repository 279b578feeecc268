"""A linear unroll-factor policy for the GCC plugin, in numpy and as ONNX.

The policy scores each factor of :data:`FACTORS` linearly over log-scaled
features and answers the best one::

    x      = log(1 + relu(features))          # float32 [1, 14]
    scores = x @ weights + bias               # float32 [1, len(FACTORS)]
    unroll_factor = FACTORS[argmax(scores)]   # int64 [1], first best on ties

:meth:`UnrollPolicy.decide` serves it from Python (``mlbridge serve --policy
FILE:decide`` with a module that builds one), :meth:`UnrollPolicy.to_onnx`
writes the same computation for ONNX Runtime or mlbridge-aot (Relu, Add,
Log, Concat, Gemm, ArgMax, Gather), and :meth:`UnrollPolicy.fit` fits the
weights to labelled loops (multinomial logistic regression).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from mlbridge.gcc.features import FEATURE_NAMES, OUTPUT_NAME

#: The factors a policy chooses among: GCC decides, no unrolling, 2, 4, 8.
FACTORS = (0, 1, 2, 4, 8)


def feature_matrix(rows: Sequence[Mapping[str, object]]) -> np.ndarray:
    """The log-scaled features of loops (dicts by feature name), float32 [n, 14]."""
    raw = np.array(
        [[float(np.asarray(row[name]).reshape(-1)[0]) for name in FEATURE_NAMES] for row in rows],
        dtype=np.float32,
    ).reshape(len(rows), len(FEATURE_NAMES))
    return np.log1p(np.maximum(raw, np.float32(0))).astype(np.float32)


@dataclass(frozen=True)
class UnrollPolicy:
    """Weights float32 [14, len(factors)], bias float32 [len(factors)]."""

    weights: np.ndarray
    bias: np.ndarray
    factors: Sequence[int] = FACTORS

    def __post_init__(self) -> None:
        shape = (len(FEATURE_NAMES), len(self.factors))
        if self.weights.shape != shape or self.bias.shape != shape[1:]:
            raise ValueError(
                f"weights must be {shape} and bias {shape[1:]}, not "
                f"{self.weights.shape} and {self.bias.shape}"
            )

    @classmethod
    def constant(cls, factor: int, factors: Sequence[int] = FACTORS) -> "UnrollPolicy":
        """The policy answering ``factor`` for every loop."""
        bias = np.zeros(len(factors), np.float32)
        bias[list(factors).index(factor)] = 1
        return cls(np.zeros((len(FEATURE_NAMES), len(factors)), np.float32), bias, factors)

    @classmethod
    def fit(
        cls,
        rows: Sequence[Mapping[str, object]],
        labels: Sequence[int],
        factors: Sequence[int] = FACTORS,
        steps: int = 2000,
        rate: float = 0.5,
        l2: float = 1e-3,
    ) -> "UnrollPolicy":
        """Weights that predict ``labels`` (factors) from the loops ``rows``
        (multinomial logistic regression, full-batch gradient descent from
        zero: deterministic)."""
        x = feature_matrix(rows).astype(np.float64)
        index = {factor: i for i, factor in enumerate(factors)}
        y = np.zeros((len(rows), len(factors)))
        y[np.arange(len(rows)), [index[int(label)] for label in labels]] = 1
        scale = x.max(axis=0)
        scale[scale == 0] = 1
        xs = x / scale
        w = np.zeros((x.shape[1], len(factors)))
        b = np.zeros(len(factors))
        for _ in range(steps):
            z = xs @ w + b
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            g = (p - y) / len(rows)
            w -= rate * (xs.T @ g + l2 * w)
            b -= rate * g.sum(axis=0)
        return cls((w / scale[:, None]).astype(np.float32), b.astype(np.float32), tuple(factors))

    def scores(self, features: Mapping[str, object]) -> np.ndarray:
        """The score of every factor for one loop (float32, as the ONNX model)."""
        return (feature_matrix([features]) @ self.weights + self.bias)[0]

    def decide(self, features: Mapping[str, object]) -> int:
        """The factor for one loop (the plugin's features by name)."""
        return int(self.factors[int(np.argmax(self.scores(features)))])

    def to_onnx(self, path: Path) -> None:
        """Writes the policy as an ONNX model (opset 13) to ``path``."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper

        nodes = []
        for name in FEATURE_NAMES:
            nodes += [
                helper.make_node("Cast", [name], [f"{name}_f"], to=TensorProto.FLOAT),
                helper.make_node("Relu", [f"{name}_f"], [f"{name}_r"]),
                helper.make_node("Add", [f"{name}_r", "one"], [f"{name}_p"]),
                helper.make_node("Log", [f"{name}_p"], [f"{name}_x"]),
            ]
        nodes += [
            helper.make_node("Concat", [f"{n}_x" for n in FEATURE_NAMES], ["x"], axis=0),
            helper.make_node("Reshape", ["x", "row"], ["x2"]),
            helper.make_node("Gemm", ["x2", "weights", "bias"], ["scores"]),
            helper.make_node("ArgMax", ["scores"], ["best"], axis=1, keepdims=0),
            helper.make_node("Gather", ["factors", "best"], [OUTPUT_NAME], axis=0),
        ]
        graph = helper.make_graph(
            nodes,
            "gcc_unroll_policy",
            [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in FEATURE_NAMES],
            [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.INT64, [1])],
            [
                numpy_helper.from_array(np.ones(1, np.float32), "one"),
                numpy_helper.from_array(np.array([1, -1], np.int64), "row"),
                numpy_helper.from_array(self.weights.astype(np.float32), "weights"),
                numpy_helper.from_array(self.bias.astype(np.float32), "bias"),
                numpy_helper.from_array(np.array(self.factors, np.int64), "factors"),
            ],
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mlbridge gcc"
        )
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, str(path))

    def save(self, path: Path) -> None:
        """Writes the weights, bias and factors as .npz."""
        np.savez(path, weights=self.weights, bias=self.bias, factors=np.array(self.factors))

    @classmethod
    def load(cls, path: Path) -> "UnrollPolicy":
        """A policy that :meth:`save` wrote."""
        with np.load(path) as data:
            return cls(
                data["weights"].astype(np.float32),
                data["bias"].astype(np.float32),
                tuple(int(f) for f in data["factors"]),
            )

"""A linear policy that picks one of a table of choices, in numpy and as ONNX.

The compiler plugins' policies (mlbridge.gcc, mlbridge.mlir) are this one
over their own features and choices::

    x      = log(1 + relu(concat(features)))       # float32 [1, F]
    scores = x @ weights + bias                      # float32 [1, K]
    output = choices[argmax(scores)]                 # int64, a choice's shape

:meth:`LinearChoicePolicy.decide` serves it from Python (``mlbridge serve``),
:meth:`LinearChoicePolicy.to_onnx` writes the same computation for ONNX
Runtime or mlbridge-aot (Cast, Relu, Add, Log, Concat, Reshape, Gemm, ArgMax,
Gather), and :meth:`LinearChoicePolicy.fit` fits the weights to labelled
examples (multinomial logistic regression, deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, Tuple, TypeVar

import numpy as np

P = TypeVar("P", bound="LinearChoicePolicy")


@dataclass(frozen=True)
class Layout:
    """What a policy reads and answers: int64 inputs (name, element count),
    the choices (int64 [K] or [K, n]) and the output's name."""

    inputs: Tuple[Tuple[str, int], ...]
    choices: np.ndarray
    output: str

    @property
    def num_features(self) -> int:
        return sum(count for _, count in self.inputs)

    def feature_matrix(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The log-scaled features of examples (dicts by input name), float32 [n, F]."""
        raw = np.zeros((len(rows), self.num_features), np.float64)
        for r, row in enumerate(rows):
            at = 0
            for name, count in self.inputs:
                value = np.asarray(row[name], dtype=np.float64).reshape(-1)
                if value.size != count:
                    raise ValueError(f"feature {name!r} has {value.size} values, not {count}")
                raw[r, at : at + count] = value
                at += count
        return np.log1p(np.maximum(raw, 0)).astype(np.float32)


@dataclass(frozen=True)
class LinearChoicePolicy:
    """Weights float32 [F, K] and bias float32 [K] over ``layout``."""

    layout: Layout
    weights: np.ndarray
    bias: np.ndarray

    def __post_init__(self) -> None:
        shape = (self.layout.num_features, len(self.layout.choices))
        if self.weights.shape != shape or self.bias.shape != shape[1:]:
            raise ValueError(
                f"weights must be {shape} and bias {shape[1:]}, not "
                f"{self.weights.shape} and {self.bias.shape}"
            )

    @classmethod
    def choosing(cls: type[P], layout: Layout, index: int) -> P:
        """The policy answering choice ``index`` for every example."""
        bias = np.zeros(len(layout.choices), np.float32)
        bias[index] = 1
        return cls(layout, np.zeros((layout.num_features, len(layout.choices)), np.float32), bias)

    @classmethod
    def fit_indices(
        cls: type[P],
        layout: Layout,
        rows: Sequence[Mapping[str, Any]],
        labels: Sequence[int],
        steps: int = 2000,
        rate: float = 0.5,
        l2: float = 1e-3,
    ) -> P:
        """Weights that predict choice indices ``labels`` from the examples
        ``rows`` (full-batch gradient descent from zero: deterministic)."""
        x = layout.feature_matrix(rows).astype(np.float64)
        k = len(layout.choices)
        y = np.zeros((len(rows), k))
        y[np.arange(len(rows)), list(labels)] = 1
        scale = x.max(axis=0) if len(rows) else np.ones(x.shape[1])
        scale[scale == 0] = 1
        xs = x / scale
        w = np.zeros((x.shape[1], k))
        b = np.zeros(k)
        for _ in range(steps):
            z = xs @ w + b
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            g = (p - y) / max(len(rows), 1)
            w -= rate * (xs.T @ g + l2 * w)
            b -= rate * g.sum(axis=0)
        return cls(layout, (w / scale[:, None]).astype(np.float32), b.astype(np.float32))

    def scores(self, features: Mapping[str, Any]) -> np.ndarray:
        """The score of every choice for one example (float32, as the ONNX model)."""
        return (self.layout.feature_matrix([features]) @ self.weights + self.bias)[0]

    def choice_index(self, features: Mapping[str, Any]) -> int:
        """The index of the chosen row of the choices (the first best)."""
        return int(np.argmax(self.scores(features)))

    def decide(self, features: Mapping[str, Any]) -> np.ndarray:
        """The choice for one example, int64 (a choice's shape)."""
        return np.asarray(self.layout.choices[self.choice_index(features)], np.int64)

    def to_onnx(self, path: Path, name: str = "linear_choice_policy") -> None:
        """Writes the policy as an ONNX model (opset 13) to ``path``."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper

        layout = self.layout
        choices = np.asarray(layout.choices, np.int64)
        nodes = []
        for feature, _ in layout.inputs:
            nodes += [
                helper.make_node("Cast", [feature], [f"{feature}_f"], to=TensorProto.FLOAT),
                helper.make_node("Relu", [f"{feature}_f"], [f"{feature}_r"]),
                helper.make_node("Add", [f"{feature}_r", "one"], [f"{feature}_p"]),
                helper.make_node("Log", [f"{feature}_p"], [f"{feature}_x"]),
            ]
        out_shape = [1] if choices.ndim == 1 else [choices.shape[1]]
        nodes += [
            helper.make_node("Concat", [f"{f}_x" for f, _ in layout.inputs], ["x"], axis=0),
            helper.make_node("Reshape", ["x", "row"], ["x2"]),
            helper.make_node("Gemm", ["x2", "weights", "bias"], ["scores"]),
            helper.make_node("ArgMax", ["scores"], ["best"], axis=1, keepdims=0),
            helper.make_node("Gather", ["choices", "best"], ["chosen"], axis=0),
            helper.make_node("Reshape", ["chosen", "out_shape"], [layout.output]),
        ]
        graph = helper.make_graph(
            nodes,
            name,
            [
                helper.make_tensor_value_info(feature, TensorProto.INT64, [count])
                for feature, count in layout.inputs
            ],
            [helper.make_tensor_value_info(layout.output, TensorProto.INT64, out_shape)],
            [
                numpy_helper.from_array(np.ones(1, np.float32), "one"),
                numpy_helper.from_array(np.array([1, -1], np.int64), "row"),
                numpy_helper.from_array(self.weights.astype(np.float32), "weights"),
                numpy_helper.from_array(self.bias.astype(np.float32), "bias"),
                numpy_helper.from_array(choices, "choices"),
                numpy_helper.from_array(np.array(out_shape, np.int64), "out_shape"),
            ],
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mlbridge"
        )
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, str(path))

    def save(self, path: Path) -> None:
        """Writes the weights, bias and choices as .npz."""
        np.savez(path, weights=self.weights, bias=self.bias, choices=self.layout.choices)

    @classmethod
    def load_weights(cls: type[P], layout: Layout, path: Path) -> P:
        """A policy over ``layout`` from what :meth:`save` wrote (the choices must match)."""
        with np.load(path) as data:
            if not np.array_equal(data["choices"], layout.choices):
                raise ValueError(f"{path}: other choices than {layout.choices.tolist()}")
            return cls(layout, data["weights"].astype(np.float32), data["bias"].astype(np.float32))

"""A linear unroll-factor policy for the GCC plugin, in numpy and as ONNX.

:class:`UnrollPolicy` is a :class:`mlbridge.linear_policy.LinearChoicePolicy`
over the plugin's 14 features choosing among :data:`FACTORS`::

    x      = log(1 + relu(features))          # float32 [1, 14]
    scores = x @ weights + bias               # float32 [1, len(FACTORS)]
    unroll_factor = FACTORS[argmax(scores)]   # int64 [1], first best on ties

:meth:`UnrollPolicy.decide` serves it from Python (``mlbridge serve --policy
FILE:decide`` with a module that builds one), :meth:`UnrollPolicy.to_onnx`
writes the same computation for ONNX Runtime or mlbridge-aot, and
:meth:`UnrollPolicy.fit` fits the weights to labelled loops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from mlbridge.gcc.features import FEATURE_NAMES, OUTPUT_NAME
from mlbridge.linear_policy import Layout, LinearChoicePolicy

#: The factors a policy chooses among: GCC decides, no unrolling, 2, 4, 8.
FACTORS = (0, 1, 2, 4, 8)


def _layout(factors: Sequence[int]) -> Layout:
    return Layout(
        tuple((name, 1) for name in FEATURE_NAMES), np.array(factors, np.int64), OUTPUT_NAME
    )


class UnrollPolicy:
    """Weights float32 [14, len(factors)], bias float32 [len(factors)]."""

    def __init__(self, weights: np.ndarray, bias: np.ndarray, factors: Sequence[int] = FACTORS):
        self.factors = tuple(int(f) for f in factors)
        self.linear = LinearChoicePolicy(_layout(self.factors), weights, bias)

    @property
    def weights(self) -> np.ndarray:
        return self.linear.weights

    @property
    def bias(self) -> np.ndarray:
        return self.linear.bias

    @classmethod
    def constant(cls, factor: int, factors: Sequence[int] = FACTORS) -> "UnrollPolicy":
        """The policy answering ``factor`` for every loop."""
        chosen = LinearChoicePolicy.choosing(_layout(factors), list(factors).index(factor))
        return cls(chosen.weights, chosen.bias, factors)

    @classmethod
    def fit(
        cls,
        rows: Sequence[Mapping[str, Any]],
        labels: Sequence[int],
        factors: Sequence[int] = FACTORS,
    ) -> "UnrollPolicy":
        """Weights that predict the factors ``labels`` from the loops ``rows``."""
        index = {f: i for i, f in enumerate(factors)}
        fitted = LinearChoicePolicy.fit_indices(
            _layout(factors), rows, [index[int(label)] for label in labels]
        )
        return cls(fitted.weights, fitted.bias, factors)

    def scores(self, features: Mapping[str, Any]) -> np.ndarray:
        """The score of every factor for one loop (float32, as the ONNX model)."""
        return self.linear.scores(features)

    def decide(self, features: Mapping[str, Any]) -> int:
        """The factor for one loop (the plugin's features by name)."""
        return int(self.linear.decide(features))

    def to_onnx(self, path: Path) -> None:
        """Writes the policy as an ONNX model (opset 13) to ``path``."""
        self.linear.to_onnx(path, "gcc_unroll_policy")

    def save(self, path: Path) -> None:
        """Writes the weights, bias and factors as .npz."""
        self.linear.save(path)

    @classmethod
    def load(cls, path: Path) -> "UnrollPolicy":
        """A policy that :meth:`save` wrote."""
        with np.load(path) as data:
            factors = tuple(int(f) for f in data["choices"])
            return cls(data["weights"].astype(np.float32), data["bias"].astype(np.float32), factors)

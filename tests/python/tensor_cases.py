"""Shared test data: one spec per dtype and random values for them."""

from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

from mlbridge.tensor_spec import DTYPES, TensorSpec

#: One tensor per dtype: scalar, vector, N-d and zero-sized shapes.
ALL_DTYPE_SPECS = [
    TensorSpec(f"t_{name}", name, shape)
    for name, shape in zip(
        DTYPES, [(1,), (), (7,), (2, 3), (2, 3, 4), (1, 33), (5,), (3, 1), (0,), (4,)]
    )
]


def random_values(specs: Sequence[TensorSpec], seed: int) -> Dict[str, np.ndarray]:
    """Deterministic values for ``specs``: normal floats, full-range integers."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in specs:
        if spec.dtype.kind == "f":
            out[spec.name] = rng.standard_normal(spec.shape).astype(spec.dtype)
        else:
            info = np.iinfo(spec.dtype)
            out[spec.name] = rng.integers(
                info.min, info.max, spec.shape, dtype=spec.dtype, endpoint=True
            )
    return out

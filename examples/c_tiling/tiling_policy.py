"""Tile-size policy of the C tiling example (examples/c_tiling/tiling.c).

Served to the example over pipes::

    mlbridge serve --pipe BASE --policy examples/c_tiling/tiling_policy.py:decide

The features of one loop nest (as tiling.c computes them):

- ``log_trips`` float32 [1, 3]: log2 of the trip counts of loops i, j, k
  (0 for the loops a shallower nest lacks);
- ``elem_size`` int64 [1, 1]: bytes per array element;
- ``log_footprint`` float32 [1, 1]: log2 of the nest's estimated working set
  per outer iteration, in bytes.

The decision, ``tile_index`` int64 [1], indexes :data:`TILES`. It is a
linear scorer: ``scores = x @ WEIGHTS + BIAS`` with
``x = [log_trips, elem_size, log_footprint]``, and the tile is the first
argmax. The scores are built so that the winner is the tile whose log2 is
closest to a "preferred log2 tile" ``x @ PREFERENCE + OFFSET``: larger loops
want larger tiles, larger elements and working sets smaller ones.
``make_tiling_model.py`` writes the very same computation as an ONNX model
(Cast, Concat, Gemm, ArgMax), which mlbridge-aot compiles into the example.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

#: The tile sizes the decision chooses among.
TILES = (8, 16, 32, 64)

#: How much each feature moves the preferred log2 tile size.
PREFERENCE = np.array([0.30, 0.30, 0.10, -0.20, -0.25], np.float32)
#: The preferred log2 tile size of an all-zero feature vector.
OFFSET = np.float32(3.2)

_LOG_TILES = np.log2(np.array(TILES, np.float32))
#: Scores are log2(tile) * preference - log2(tile)^2 / 2: the highest is the
#: tile nearest the preference, and the scores stay linear in the features.
WEIGHTS = np.outer(PREFERENCE, _LOG_TILES).astype(np.float32)
BIAS = (_LOG_TILES * OFFSET - _LOG_TILES * _LOG_TILES / 2).astype(np.float32)


def features_vector(features: Dict[str, np.ndarray]) -> np.ndarray:
    """The five features of one nest, in the model's order, as float32."""
    return np.concatenate(
        [
            features["log_trips"].reshape(-1).astype(np.float32),
            features["elem_size"].reshape(-1).astype(np.float32),
            features["log_footprint"].reshape(-1).astype(np.float32),
        ]
    )


def scores(features: Dict[str, np.ndarray]) -> np.ndarray:
    """The score of every tile in :data:`TILES` (float32, as the model)."""
    return features_vector(features) @ WEIGHTS + BIAS


def decide(features: Dict[str, np.ndarray], **_: object) -> int:
    """The index in :data:`TILES` of the tile for this nest."""
    return int(np.argmax(scores(features)))

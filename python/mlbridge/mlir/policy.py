"""A linear tile-size policy for the MLIR tiling pass, in numpy and as ONNX.

:class:`TilePolicy` is a :class:`mlbridge.linear_policy.LinearChoicePolicy`
over the pass's features choosing a row of :data:`TILE_CHOICES`; ``decide``
serves it from Python, ``to_onnx`` writes it for ONNX Runtime or
mlbridge-aot.
"""

from __future__ import annotations

import numpy as np

from mlbridge.linear_policy import Layout, LinearChoicePolicy
from mlbridge.mlir.features import FEATURES, OUTPUT_NAME

#: The tile sizes a policy chooses among (0: that loop is not tiled).
TILE_CHOICES = np.array(
    [
        [0, 0, 0],
        [8, 8, 8],
        [16, 16, 16],
        [32, 32, 32],
        [64, 64, 64],
        [8, 64, 8],
        [16, 128, 16],
        [4, 256, 64],
    ],
    np.int64,
)

#: What a tile policy reads and answers.
LAYOUT = Layout(FEATURES, TILE_CHOICES, OUTPUT_NAME)


class TilePolicy(LinearChoicePolicy):
    """A LinearChoicePolicy over :data:`LAYOUT`."""

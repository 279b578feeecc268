"""The ML side of mlbridge's MLIR 19 tiling pass plugin (docs/mlir-plugin.md).

The plugin (``mlbridge-mlir-tiling.so`` in stock ``mlir-opt-19``, pass
``mlbridge-tile``) asks a model for the tile sizes of every linalg
operation's first three loops, from the features in :data:`FEATURES`.
:mod:`mlbridge.mlir.policy` is a policy for it (the tiling problem and its
kernel suite: :mod:`mlbridge.problems.mlir_tiling`).
"""

from mlbridge.mlir.features import FEATURES, OUTPUT_NAME, read_tiling_log
from mlbridge.mlir.policy import TILE_CHOICES, TilePolicy

__all__ = ["FEATURES", "OUTPUT_NAME", "TILE_CHOICES", "TilePolicy", "read_tiling_log"]

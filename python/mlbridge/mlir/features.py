"""What the MLIR tiling pass sends a model about a linalg op, and its log."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

from mlbridge.plugin_logs import read_plugin_log

#: The loops of a nest a decision sizes (outer first).
MAX_TILED_LOOPS = 3

#: The pass's inputs, in its order (src/mlir/TilingFeatures.h): name and
#: element count, all int64. ``loop_ranges`` holds the static ranges of the
#: first three loops (0: no such loop, -1: dynamic); ``default_tile_sizes``
#: the pass's own decision.
FEATURES: Tuple[Tuple[str, int], ...] = (
    ("num_loops", 1),
    ("num_parallel", 1),
    ("num_reduction", 1),
    ("element_bits", 1),
    ("num_inputs", 1),
    ("num_outputs", 1),
    ("footprint_bytes", 1),
    ("body_ops", 1),
    ("is_contraction", 1),
    ("is_convolution", 1),
    ("is_elementwise", 1),
    ("loop_ranges", MAX_TILED_LOOPS),
    ("default_tile_sizes", MAX_TILED_LOOPS),
)

#: The model's output: tile sizes of the first three loops, int64 [3]
#: (0: that loop is not tiled).
OUTPUT_NAME = "tile_sizes"

_KEYS = ("function", "operation", "features", "tile_sizes", "source", "runner_us")


def read_tiling_log(path: Path) -> List[Dict[str, Any]]:
    """The nests of a tiling log (``mlbridge-tile{log=FILE}``), one dict per
    JSON line; ValueError naming the line when one is malformed."""
    return read_plugin_log(path, _KEYS, [name for name, _ in FEATURES], "a nest")

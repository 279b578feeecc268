"""What the GCC plugin sends a model about a loop, and its decision log."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from mlbridge.plugin_logs import read_plugin_log

#: The plugin's features, in its order (src/gcc/LoopFeatures.h): one int64
#: scalar tensor of shape [1] each; -1 means "unknown" for the trip counts.
FEATURE_NAMES = (
    "loop_depth",
    "is_innermost",
    "num_blocks",
    "num_insns",
    "num_statements",
    "num_exits",
    "num_calls",
    "num_loads",
    "num_stores",
    "num_float_ops",
    "num_branches",
    "trip_count",
    "max_trip_count",
    "estimated_trips",
)

#: The model's output: an int64 tensor of shape [1], the factor
#: ``#pragma GCC unroll`` would get (0: GCC decides, 1: no unrolling).
OUTPUT_NAME = "unroll_factor"

#: The keys of every line of a decision log.
_LOG_KEYS = ("function", "file", "line", "loop", "features", "factor", "source")


def read_decision_log(path: Path) -> List[Dict[str, Any]]:
    """The loops of a decision log (``-fplugin-arg-mlbridge_gcc-log=FILE``),
    one dict per JSON line; ValueError naming the line when one is malformed."""
    return read_plugin_log(path, _LOG_KEYS, FEATURE_NAMES, "a decision")

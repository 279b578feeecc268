"""What the GCC plugin sends a model about a loop, and its decision log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

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
    loops = []
    with open(path, encoding="utf-8") as lines:
        for number, text in enumerate(lines, 1):
            try:
                loop = json.loads(text)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not JSON: {err}") from None
            if not isinstance(loop, dict) or any(key not in loop for key in _LOG_KEYS):
                raise ValueError(f"{path}:{number}: a decision needs the keys {_LOG_KEYS}")
            if tuple(loop["features"]) != FEATURE_NAMES:
                raise ValueError(f"{path}:{number}: features {list(loop['features'])}")
            loops.append(loop)
    return loops

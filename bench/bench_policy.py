"""The policy served in bench/PipeBench: reads one feature, answers an int64."""

from typing import Mapping

import numpy as np


def first_positive(features: Mapping[str, np.ndarray], **_: object) -> int:
    """1 when feature f0 is positive (touches one feature, like a cheap model)."""
    return int(features["f0"][0] > 0)

"""The policy served in the pipe and gRPC benchmarks: reads one value, answers an int64."""

from typing import Mapping

import numpy as np


def first_positive(features: Mapping[str, np.ndarray], **_: object) -> int:
    """1 when the first element of the first feature is positive (``f0`` of
    64 scalar features, or element 0 of one tensor of 64): touches one value,
    like a cheap model.

    The value is read with ``item(0)``, a Python float: ``first.flat[0] > 0``
    (a flat iterator, a numpy scalar, a numpy comparison) costs 2.0 us per
    call, as much as the whole host loop, and would be timed as the library's.
    """
    first = next(iter(features.values()))
    return int(first.item(0) > 0)

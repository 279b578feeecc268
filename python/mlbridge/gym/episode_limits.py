"""What every environment of :mod:`mlbridge.gym` bounds the same way: its
deadlines, how much of a compiler's stderr an error carries, and the range
of its observations."""

from __future__ import annotations

import math

import numpy as np

from mlbridge.runner_config import MAX_TIMEOUT_MS

#: Seconds the serving side waits beyond the environment's own deadline, so
#: that an abandoned session is ended by the compiler's (or the service's)
#: deadline, with its message.
IDLE_MARGIN = 5.0
#: The observation space's bound (features are float32).
FLOAT_MAX = float(np.finfo(np.float32).max)


def seconds(name: str, value: float) -> float:
    """``value`` as a deadline in seconds: a finite positive number (NaN,
    infinity, zero and negatives are refused with ValueError naming
    ``name``)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds, got {value!r}") from None
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return number


def runner_ms(seconds_: float, extra_ms: int = 0) -> int:
    """A deadline in seconds as a runner's ``*_timeout_ms`` (plus
    ``extra_ms``), at most the longest a runner configuration accepts."""
    return min(int(seconds_ * 1000) + extra_ms, MAX_TIMEOUT_MS)

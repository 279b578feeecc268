"""Policies used by the C++ tests against the Python pipe host."""

import time
from typing import Dict

import numpy as np


def checksum(features: Dict[str, np.ndarray], **_: object) -> int:
    """Sum of every byte of every feature (the C++ side computes the same)."""
    return int(
        sum(int(np.frombuffer(v.tobytes(), dtype=np.uint8).sum()) for v in features.values())
    )


def echo(features: Dict[str, np.ndarray], **_: object) -> Dict[str, np.ndarray]:
    """Returns every input unchanged under the name '<input>_out'."""
    return {name + "_out": value for name, value in features.items()}


def fail_on_negative(features: Dict[str, np.ndarray], **_: object) -> int:
    """x + 1, raising on negative x."""
    x = int(features["x"].reshape(-1)[0])
    if x < 0:
        raise ValueError("negative input")
    return x + 1


def slow(features: Dict[str, np.ndarray], **_: object) -> int:
    """Takes far longer than any test waits (the test kills the host)."""
    time.sleep(60)
    return 0


def context_plus_x(features: Dict[str, np.ndarray], context: str = "", **_: object) -> int:
    """len(context) + x, raising on negative x (contexts and failures)."""
    x = int(features["x"].reshape(-1)[0])
    if x < 0:
        raise ValueError("negative input")
    return len(context) + x


class _SlowStart:
    """x + 1, after a begin() slow enough that the compiler's first request
    is waiting before the host looks (the shm protocol's start)."""

    def begin(self, session: object) -> None:
        time.sleep(0.3)

    def __call__(self, features: Dict[str, np.ndarray], **_: object) -> int:
        return int(features["x"].reshape(-1)[0]) + 1


slow_start = _SlowStart()

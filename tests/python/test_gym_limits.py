"""Every environment bounds its deadlines the same way
(mlbridge.gym.episode_limits): NaN, infinity, zero and negatives are refused
before anything starts."""

from __future__ import annotations

import math

import pytest

from mlbridge.gym.episode_limits import runner_ms, seconds
from mlbridge.problems.inlining.environment import InliningEnv
from mlbridge.problems.phase_ordering.environment import PhaseOrderingEnv
from mlbridge.runner_config import MAX_TIMEOUT_MS

BAD = [math.nan, math.inf, -math.inf, 0, -1.0, "soon", None]


@pytest.mark.parametrize("value", BAD)
def test_a_deadline_is_a_positive_finite_number_of_seconds(value):
    with pytest.raises(ValueError, match="step_timeout"):
        seconds("step_timeout", value)


def test_deadlines_convert_to_runner_milliseconds_within_the_runners_range():
    assert seconds("t", 2) == 2.0 and seconds("t", "0.5") == 0.5
    assert runner_ms(2.5) == 2500 and runner_ms(2.5, extra_ms=1000) == 3500
    assert runner_ms(10.0**12) == MAX_TIMEOUT_MS


@pytest.mark.parametrize("value", [math.nan, math.inf, 0])
@pytest.mark.parametrize(
    "make",
    [
        lambda t: InliningEnv(modules=[], step_timeout=t),
        lambda t: InliningEnv(modules=[], episode_timeout=t),
        lambda t: PhaseOrderingEnv(modules=[], step_timeout=t),
    ],
    ids=["inlining step", "inlining episode", "phase-ordering step"],
)
def test_both_environments_refuse_the_same_deadlines(make, value):
    with pytest.raises(ValueError, match="timeout must be a positive, finite number"):
        make(value)

"""A trained GCC unrolling policy deployed in its plugin and measured
(:func:`mlbridge.train.deploy_kernels.evaluate_with`)."""

from __future__ import annotations

import functools

from mlbridge.train.deploy_kernels import evaluate_with

#: The problem's ``evaluate``.
evaluate_trained = functools.partial(
    evaluate_with, "mlbridge.problems.gcc_unroll.environment:GccUnrollEnv"
)

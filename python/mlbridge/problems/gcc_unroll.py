"""Loop unrolling in stock ``gcc-12 -O2``: the unroll factor of every loop,
through mlbridge's GCC plugin; reward: the kernel's run time against GCC's
own factors, on the kernel suite of :mod:`mlbridge.gcc.kernels`."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from mlbridge.gcc.features import FEATURE_NAMES, OUTPUT_NAME
from mlbridge.gcc.policy import FACTORS
from mlbridge.problems.problem import Problem
from mlbridge.tensor_spec import TensorSpec

#: The plugin's features: 14 int64 scalars.
FEATURES: Tuple[Tuple[str, int], ...] = tuple((name, 1) for name in FEATURE_NAMES)


def deploy_inputs(
    names: Sequence[str], kept: List[int]
) -> Tuple[List[TensorSpec], Optional[List[int]]]:
    """The plugin feeds a model its 14 features as int64 [1] each."""
    inputs = [TensorSpec(name, "int64_t", (count,)) for name, count in FEATURES]
    if [s.name for s in inputs] != list(names):
        raise ValueError("the GCC plugin's features do not match the observation")
    return inputs, kept


PROBLEM = Problem(
    name="gcc-unroll",
    env_id="mlbridge/GccUnroll-v0",
    environment="mlbridge.gym.gcc_unroll:GccUnrollEnv",
    hidden=(),
    output=OUTPUT_NAME,
    deploy_inputs=deploy_inputs,
    description="the unroll factor of each loop (gcc-12 -O2, GCC plugin), "
    "reward: the kernel's run time vs GCC's own factors",
    # 0: GCC decides, 1: no unrolling, then 2, 4, 8 times.
    answers=tuple(FACTORS),
    baseline_action=0,
    suite="mlbridge.gym.gcc_unroll:suite_modules",
    evaluate="mlbridge.train.deploy_kernels:gcc_unroll",
    gamma=1.0,
    gae_lambda=1.0,
)

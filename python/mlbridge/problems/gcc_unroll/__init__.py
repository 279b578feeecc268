"""Loop unrolling in stock ``gcc-12 -O2``: the unroll factor of every loop,
through mlbridge's GCC plugin; reward: the kernel's run time against GCC's
own factors, on the kernel suite of :mod:`mlbridge.problems.gcc_unroll.kernels`.

The folder: this declaration; ``environment`` (``GccUnrollEnv``);
``kernels`` (the suite); ``deploy`` (the exported model in the plugin,
timed)."""

from __future__ import annotations

from typing import Tuple

from mlbridge.gcc.features import FEATURE_NAMES, OUTPUT_NAME
from mlbridge.gcc.policy import FACTORS
from mlbridge.problems.capabilities import AnswerTable, KernelSuite
from mlbridge.problems.problem import Problem, TensorInputs
from mlbridge.tensor_spec import TensorSpec

#: The plugin's features: 14 int64 scalars.
FEATURES: Tuple[Tuple[str, int], ...] = tuple((name, 1) for name in FEATURE_NAMES)


#: The plugin feeds a model its 14 features as int64 [1] each.
DEPLOY_INPUTS = TensorInputs(tuple(TensorSpec(name, "int64_t", (n,)) for name, n in FEATURES))


PROBLEM = Problem(
    name="gcc-unroll",
    env_id="mlbridge/GccUnroll-v0",
    environment="mlbridge.problems.gcc_unroll.environment:GccUnrollEnv",
    output=OUTPUT_NAME,
    description="the unroll factor of each loop (gcc-12 -O2, GCC plugin), "
    "reward: the kernel's run time vs GCC's own factors",
    deploy_inputs=DEPLOY_INPUTS,
    evaluate="mlbridge.problems.gcc_unroll.deploy:evaluate_trained",
    gamma=1.0,
    gae_lambda=1.0,
    capabilities=(
        # 0: GCC decides, 1: no unrolling, then 2, 4, 8 times.
        AnswerTable(tuple(FACTORS), keeps_default=0),
        KernelSuite("mlbridge.problems.gcc_unroll.environment:suite_modules"),
    ),
)

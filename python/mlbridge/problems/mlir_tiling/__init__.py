"""Tiling in stock ``mlir-opt-19``: the tile sizes of every linalg operation,
through mlbridge's MLIR pass plugin; reward: the kernel's run time (lowered
and run by ``mlir-cpu-runner-19``) against the pass's own sizes, on the
kernel suite of :mod:`mlbridge.problems.mlir_tiling.kernels`.

The folder: this declaration; ``environment`` (``MlirTilingEnv``);
``kernels`` (the suite); ``deploy`` (the exported model in the plugin,
timed)."""

from __future__ import annotations

from typing import Tuple

from mlbridge.mlir.features import FEATURES, OUTPUT_NAME
from mlbridge.mlir.policy import TILE_CHOICES
from mlbridge.problems.capabilities import Answer, AnswerTable, KernelSuite
from mlbridge.problems.problem import Problem, TensorInputs
from mlbridge.tensor_spec import TensorSpec

#: Action 0 keeps the pass's own sizes; the others answer a row of TILE_CHOICES.
ANSWERS: Tuple[Answer, ...] = ("default_tile_sizes",) + tuple(
    tuple(int(v) for v in row) for row in TILE_CHOICES.tolist()
)


#: The pass feeds a model its int64 features, shaped [1] or [3].
DEPLOY_INPUTS = TensorInputs(tuple(TensorSpec(name, "int64_t", (n,)) for name, n in FEATURES))


PROBLEM = Problem(
    name="mlir-tiling",
    env_id="mlbridge/MlirTiling-v0",
    environment="mlbridge.problems.mlir_tiling.environment:MlirTilingEnv",
    output=OUTPUT_NAME,
    description="the tile sizes of each linalg operation (mlir-opt-19, MLIR pass plugin), "
    "reward: the kernel's run time vs the pass's own sizes",
    deploy_inputs=DEPLOY_INPUTS,
    evaluate="mlbridge.problems.mlir_tiling.deploy:evaluate_trained",
    llvm_majors=(19,),
    gamma=1.0,
    gae_lambda=1.0,
    capabilities=(
        AnswerTable(ANSWERS, keeps_default=0),
        KernelSuite("mlbridge.problems.mlir_tiling.environment:suite_modules"),
    ),
)

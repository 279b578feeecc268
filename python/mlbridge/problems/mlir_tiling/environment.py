"""``mlbridge/MlirTiling-v0``: the tile sizes of every linalg operation of
stock ``mlir-opt-19``, through mlbridge's MLIR pass plugin
(docs/mlir-plugin.md).

One episode is one kernel of :mod:`mlbridge.problems.mlir_tiling.kernels` tiled by the
plugin's ``mlbridge-tile`` pass; each step answers one operation (action 0:
the pass's own sizes, the others a row of
:data:`~mlbridge.mlir.policy.TILE_CHOICES`); the reward is the kernel's run
time, lowered and run by ``mlir-cpu-runner-19 -O3``, against the pass's own
sizes (:class:`~mlbridge.gym.timed_kernels.TimedKernelEnv`). Checksums are
compared to a relative 1e-4: tiling reorders floating-point sums.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from mlbridge.gym.corpus_modules import EnvError
from mlbridge.gym.modules import Module
from mlbridge.gym.timed_kernels import TimedKernelEnv, kernel_modules
from mlbridge.mlir import read_tiling_log
from mlbridge.mlir.plugin_settings import TilingPassSettings
from mlbridge.native import mlir_plugin_path
from mlbridge.problems.mlir_tiling import FEATURES as _FEATURES
from mlbridge.problems.mlir_tiling import PROBLEM, kernels

__all__ = ["EnvError", "MlirTilingEnv", "suite_modules"]

#: Relative difference of checksums that counts as the same result.
CHECKSUM_TOLERANCE = 1e-4


def suite_modules(split: str, directory: Path, repeats: int = 3) -> List[Module]:
    """The suite's kernels of ``split`` as MLIR modules in ``directory``
    (each timing ``repeats`` calls)."""
    return kernel_modules(
        [
            (k.name, kernels.kind_of(k.name), kernels.split_of(k.name), k.module(repeats))
            for k in kernels.suite()
            if kernels.split_of(k.name) == split
        ],
        directory,
        ".mlir",
    )


class MlirTilingEnv(TimedKernelEnv):
    """Tile sizes in mlir-opt-19, rewarded by run time (see the module).

    Arguments as :class:`~mlbridge.gym.timed_kernels.TimedKernelEnv`. A module
    given as a path is an MLIR module of the suite's form (``@kernel`` and a
    ``@main`` printing the fastest time and a checksum,
    :class:`mlbridge.problems.mlir_tiling.kernels.Kernel`).
    """

    problem = PROBLEM
    features = _FEATURES
    decision_name = "linalg operation"
    output_suffix = ".tiled.mlir"
    suite = staticmethod(suite_modules)
    log_answer = "tile_sizes"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kernels.tools()
        super().__init__(*args, **kwargs)

    def _default_plugin(self) -> Path:
        return mlir_plugin_path()

    def _compile_command(
        self, module: Module, output: Path, runner: Optional[str], log: Path
    ) -> List[str]:
        settings = TilingPassSettings(runner=runner, log=str(log))
        return kernels.tile_command(module.bitcode, output, self.plugin, settings)

    def _read_log(self, path: Path) -> List[Dict[str, Any]]:
        return read_tiling_log(path)

    def _prepare(self, output: Path) -> Path:
        lowered = output.with_name(output.name + ".llvm.mlir")
        kernels.lower(output, lowered)
        return lowered

    def _measure(self, runnable: Path) -> Tuple[float, str]:
        seconds, checksum = kernels.execute(runnable)
        return seconds, repr(checksum)

    def _same_result(self, checksum: str, default: str) -> bool:
        return math.isclose(float(checksum), float(default), rel_tol=CHECKSUM_TOLERANCE)

"""``mlbridge/GccUnroll-v0``: the unroll factor of every loop of stock
``gcc-12 -O2``, through mlbridge's GCC plugin (docs/gcc-plugin.md).

One episode is one kernel of :mod:`mlbridge.problems.gcc_unroll.kernels` compiled with the
plugin; each step answers one loop (the problem's factors: 0 lets GCC
decide, 1 does not unroll, 2, 4, 8); the reward is the kernel's run time,
linked with the suite's harness, against GCC's own factors
(:class:`~mlbridge.gym.timed_kernels.TimedKernelEnv`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from mlbridge.gcc.features import read_decision_log
from mlbridge.gcc.plugin_settings import GccPluginSettings
from mlbridge.gym.corpus_modules import EnvError
from mlbridge.gym.modules import Module
from mlbridge.gym.timed_kernels import TimedKernelEnv, kernel_modules
from mlbridge.native import gcc_plugin_path
from mlbridge.problems.gcc_unroll import FEATURES, PROBLEM, kernels

__all__ = ["EnvError", "GccUnrollEnv", "suite_modules"]


def suite_modules(split: str, directory: Path) -> List[Module]:
    """The suite's kernels of ``split`` as C sources in ``directory``."""
    return kernel_modules(
        [
            (k.name, k.name, kernels.split_of(k.name), k.source())
            for k in kernels.suite()
            if kernels.split_of(k.name) == split
        ],
        directory,
        ".c",
    )


class GccUnrollEnv(TimedKernelEnv):
    """Unroll factors in gcc-12 -O2, rewarded by run time (see the module).

    Arguments as :class:`~mlbridge.gym.timed_kernels.TimedKernelEnv`, and
    ``calls`` / ``reps``: the harness's batches (the fastest of ``reps``
    batches of ``calls`` calls per run). A module given as a path is a C file
    defining ``double kernel(void)`` over the harness's arrays
    (:data:`mlbridge.problems.gcc_unroll.kernels.PRELUDE`).
    """

    problem = PROBLEM
    features = FEATURES
    decision_name = "loop"
    output_suffix = ".o"
    suite = staticmethod(suite_modules)
    log_answer = "factor"

    def __init__(self, *args: Any, calls: int = 500, reps: int = 5, **kwargs: Any) -> None:
        for name, value in (("calls", calls), ("reps", reps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        self.calls, self.reps = calls, reps
        kernels.tools()
        super().__init__(*args, **kwargs)

    def _default_plugin(self) -> Path:
        return gcc_plugin_path()

    def _compile_command(
        self, module: Module, output: Path, runner: Optional[str], log: Path
    ) -> List[str]:
        settings = GccPluginSettings(runner=runner, log=str(log))
        return kernels.compile_command(module.bitcode, output, self.plugin, settings)

    def _read_log(self, path: Path) -> List[Dict[str, Any]]:
        return read_decision_log(path)

    def _prepare(self, output: Path) -> Path:
        program = output.with_suffix(".run")
        kernels.link(output, Path(self._workdir()), program)
        return program

    def _measure(self, runnable: Path) -> Tuple[float, str]:
        nanoseconds, checksum = kernels.run(runnable, self.calls, self.reps)
        return nanoseconds * 1e-9, checksum

"""``mlbridge/RegallocEviction-v0``: eviction in the greedy register
allocator of stock ``llc-19`` (docs/regalloc.md).

One episode is ``llc-19 -O2`` on one module (IR optimised by clang's -O2
pipeline, :data:`~mlbridge.gym.modules.OPTIMIZED_MODULE_FLAGS`), stopped
after the allocation's rewriting. LLVM 19's eviction advisor, in its
interactive mode, pauses at every question (which of up to 32 interfering
live ranges to evict so that the current one gets a register, or none:
candidate 32) and sends its features over a pipe channel
(:func:`mlbridge.llvm.run_compiler`); the action is its answer. A candidate
whose ``mask`` is 0 is refused (the episode ends with an error), and
:meth:`RegallocEvictionEnv.action_masks` gives the legal ones to a masking
learner. When the allocation is done, the reward compares MLGO's regalloc
score of the allocated code (:mod:`mlbridge.problems.regalloc_eviction.score`) with that
of the default advisor on the same module: ``(default - score) / default``.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from gymnasium import spaces

from mlbridge.gym.compiler_env import EnvOptions
from mlbridge.gym.corpus_modules import EnvError, SkipModule
from mlbridge.gym.episode_limits import FLOAT_MAX
from mlbridge.gym.modules import Module, default_cache_dir, module_flags
from mlbridge.gym.served_compilation import (
    Outcome,
    ServedCompilerEnv,
    ServedEpisode,
    SessionPolicy,
    StepResult,
)
from mlbridge.llvm import REGALLOC_EVICTION
from mlbridge.llvm.driver import RunResult, run_compiler
from mlbridge.llvm.functions import FunctionError, function_modules
from mlbridge.problems.capabilities import OptimizedModules
from mlbridge.problems.regalloc_eviction import (
    CANDIDATES,
    FEATURES,
    MASK,
    PROBLEM,
    DensityHeuristic,
    observation_names,
)
from mlbridge.problems.regalloc_eviction.score import (
    LLC,
    AllocationError,
    DefaultAllocation,
    ScoreError,
    allocation_command,
    default_allocation,
    llc_input,
    object_command,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["EnvError", "RegallocEvictionEnv"]

_LOG = logging.getLogger("mlbridge.gym")


def _functions_of(
    modules: Sequence[Module], cache_dir: Optional[Union[str, os.PathLike]]
) -> List[Module]:
    """Each function of ``modules`` as a module of its own."""
    base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out = []
    for module in modules:
        try:
            functions = function_modules(module.bitcode, base / "functions")
        except FunctionError as err:
            _LOG.warning("mlbridge.gym: module %s left out: %s", module.name, err)
            continue
        out += [
            Module(f"{module.name}:{name}", path, module.program, module.split, module.flags)
            for name, path in functions
        ]
    if not out:
        raise EnvError("the modules define no function")
    return out


class RegallocEvictionEnv(ServedCompilerEnv):
    """Eviction in llc-19's greedy register allocator; see docs/regalloc.md.

    - ``modules``: the modules (:class:`mlbridge.gym.modules.Module`, or paths
      of bitcode or IR files, compiled as they are); else the programs of
      the corpus that the keywords of
      :class:`~mlbridge.gym.compiler_env.EnvOptions` select, optimised by
      clang-19 -O2 into ``cache_dir``.
    - ``step_timeout`` (default 60): seconds the compiler may take to reach
      the next question (or its end); ``episode_timeout`` (default 600):
      seconds an episode's compilation may last, the agent's time included
      (and the default advisor's compilation of a module).
    - ``opt_level``: llc's ``-O`` level (1, 2 or 3).
    - ``per_function``: every function of every module is a module of its
      own (``MODULE:FUNCTION``, extracted by llvm-extract-19 into
      ``cache_dir``): an episode allocates one function and its reward is
      that function's score against the default advisor's, as MLGO rewards
      eviction.
    """

    metadata: Dict[str, Any] = {"render_modes": []}
    decision_name = "eviction"

    def __init__(
        self,
        modules: Optional[Sequence[Union[Module, str, os.PathLike]]] = None,
        *,
        opt_level: int = 2,
        per_function: bool = False,
        llc: str = LLC,
        **options: Unpack[EnvOptions],
    ) -> None:
        self._take_common(options)
        if opt_level not in (1, 2, 3):
            raise ValueError(f"opt_level must be 1, 2 or 3, got {opt_level!r}")
        self.opt_level, self.llc = opt_level, llc
        self.per_function = per_function
        optimized = PROBLEM.get(OptimizedModules) is not None
        self._load_modules(modules, module_flags=module_flags(optimized))
        if per_function:
            self.modules = _functions_of(self.modules, self.choice.cache_dir)
            self._by_name = {m.name: m for m in self.modules}
        self._baselines: Dict[str, DefaultAllocation] = {}
        self._inputs: Dict[str, Path] = {}
        self._make_workdir("mlbridge-regalloc-")
        self._episode: Optional[ServedEpisode] = None
        self._episodes = 0
        #: The observation's names: each feature of LLVM's eviction advisor,
        #: one per candidate (``mask[0]`` ... ``mask[32]``), in LLVM's order.
        self.feature_names: Tuple[str, ...] = observation_names()
        self.observation_space = self._box(self.feature_names)
        self.action_space = spaces.Discrete(CANDIDATES)

    # -- the compiler ----------------------------------------------------------

    def _command(self, module: Module, output: Path) -> List[str]:
        return allocation_command(
            self.llc, self.opt_level, self._input(module), module.flags, output
        )

    def _input(self, module: Module) -> Path:
        """The bitcode llc allocates for ``module`` (textual IR assembled
        once); raises :class:`SkipModule` when there is none."""
        if module.name not in self._inputs:
            try:
                self._inputs[module.name] = llc_input(
                    self.llc, module.bitcode, Path(self._workdir()), self.episode_timeout
                )
            except AllocationError as err:
                raise SkipModule(str(err)) from None
        return self._inputs[module.name]

    def _baseline(self, module: Module) -> DefaultAllocation:
        """The default advisor's allocation of ``module`` (measured once per
        environment); raises :class:`SkipModule` when it cannot be measured."""
        if module.name not in self._baselines:
            try:
                self._baselines[module.name] = default_allocation(
                    self.llc,
                    self.opt_level,
                    self._input(module),
                    module.flags,
                    Path(self._workdir()),
                    self.episode_timeout,
                )
            except AllocationError as err:
                raise SkipModule(str(err)) from None
        return self._baselines[module.name]

    def default_score(self, module: str) -> float:
        """MLGO's regalloc score of the default advisor on the module named
        ``module`` (measured once per environment)."""
        if module not in self._by_name:
            raise EnvError(f"no module named {module!r}")
        try:
            return self._baseline(self._by_name[module]).score.score()
        except SkipModule as skip:
            raise EnvError(f"{module}: {skip}") from None

    # -- the episode -----------------------------------------------------------

    def _start(self, module: Module) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Starts ``module``'s allocation up to its first eviction question;
        raises :class:`SkipModule` when it gives no episode."""
        self._baseline(module)
        self._episodes += 1
        output = Path(self._workdir()) / f"episode-{self._episodes}.mir"
        episode = ServedEpisode(module, output)
        command = self._command(module, output)
        workdir, timeout = self._workdir(), self.episode_timeout

        def serve(decide: Any) -> RunResult:
            return run_compiler(
                command,
                {REGALLOC_EVICTION: SessionPolicy(decide, episode)},
                timeout=timeout,
                channel_dir=workdir,
                stdout=subprocess.DEVNULL,
                on_start=episode.started,
            )

        event = self._open(episode, serve)
        expected = tuple((name, count) for name, _, count in FEATURES)
        self._require_features(episode, self._sent_features(episode), expected, self.llc)
        return self._hand(episode, event), self._info(episode)

    def _observe(self, features: Dict[str, np.ndarray]) -> np.ndarray:
        arrays = [features[name] for name, _, _ in FEATURES]
        observation = np.concatenate(arrays, axis=None, dtype=np.float32, casting="unsafe")
        # LLVM sends NaN for some densities (use_def_density of a live range
        # of no length): observed as 0, as the deployment host feeds them.
        return np.nan_to_num(observation, nan=0.0, posinf=FLOAT_MAX, neginf=-FLOAT_MAX)

    def _info(self, episode: ServedEpisode) -> Dict[str, Any]:
        info = super()._info(episode)
        info["action_mask"] = self._mask(episode)
        return info

    @staticmethod
    def _mask(episode: ServedEpisode) -> np.ndarray:
        mask = episode.features.get(MASK)
        if mask is None:
            return np.zeros(CANDIDATES, dtype=bool)
        return np.asarray(mask).reshape(-1) != 0

    def action_masks(self) -> np.ndarray:
        """The legal candidates of the current question (all False when no
        episode runs): what sb3-contrib's ``MaskablePPO`` reads."""
        episode = self._episode
        if episode is None or episode.done:
            return np.zeros(CANDIDATES, dtype=bool)
        return self._mask(episode)

    def baseline_action(self) -> int:
        """The density heuristic's answer to the current question: LLVM 19
        does not send the default advisor's own choice, and the heuristic
        allocates about as well (:class:`~mlbridge.problems.regalloc_eviction.DensityHeuristic`)."""
        episode = self._running()
        assert episode.observation is not None
        return DensityHeuristic(self.feature_names)(episode.observation)

    def step(self, action: Any) -> StepResult:
        """Answers the current question: the index of the candidate to evict
        (32: none, the current live range is split or spilled)."""
        episode = self._running()
        if not self.action_space.contains(action):
            return self._fault(
                episode,
                f"invalid action {action!r} (a {type(action).__name__}): "
                f"expected a candidate 0..{CANDIDATES - 1}, Discrete({CANDIDATES})",
            )
        mask = self._mask(episode)
        if not mask[int(action)]:
            return self._fault(
                episode,
                f"candidate {int(action)} cannot be evicted (mask[{int(action)}] == 0; "
                f"legal: {np.flatnonzero(mask).tolist()})",
            )
        return self._answer(episode, int(action))

    def _finished_object(self, episode: ServedEpisode, scratch: Path) -> Path:
        """The allocated code through the rest of llc's code generation."""
        if self.per_function:
            raise EnvError(
                "with per_function=True an episode allocates one function out of its "
                "module: there is no program to run"
            )
        output = scratch / "state.o"
        command = object_command(
            self.llc, self.opt_level, episode.output, episode.module.flags, output
        )
        what = f"{self.llc} -start-after"
        self._make_state_object(command, self.episode_timeout, what, "the allocated code")
        return output

    def _outcome(self, episode: ServedEpisode, result: RunResult) -> Outcome:
        baseline = self._baseline(episode.module)
        try:
            score = baseline.score_of(episode.output)
        except ScoreError as err:
            return f"scoring the allocation failed: {err}"
        default = baseline.score.score()
        value = score.score()
        reward = (default - value) / max(default, 1.0)
        return reward, {"score": value, "default_score": default, "counts": score.to_dict()}

"""Environments over a suite of kernels that a plugin compiles and that are
then run: the reward is run time against the compiler's own decisions.

One episode is one kernel compiled by a stock compiler with an mlbridge
plugin whose runner is a private pipe channel in LLVM's protocol
(``pipe:BASE``): at every decision the plugin sends its features, ``step``
answers (the problem's :class:`~mlbridge.problems.capabilities.AnswerTable`: a factor,
a row of tile sizes, or the plugin's own decision). When the compilation is
done, the program is built and run ``rounds`` times; its fastest time is
compared with that of the compiler's own decisions (built once per kernel,
run in turn with the episode's program so that both meet the same state of
the machine): the reward is the log of the speedup, ``log(default / seconds)``
(0 as fast, > 0 faster, symmetric in slowdowns and speedups). The same
answers on the same kernel make the same program: its outcome is measured
once per environment and given again (``env.measured``, ``env.reused``
count them), which keeps rewards consistent on a noisy machine and saves
the runs. The program's checksum
must equal the default build's, and a decision the plugin did not take
(its log says ``fallback``) ends the episode with ``info["error"]``, as
every fault of :class:`~mlbridge.gym.served_compilation.ServedCompilerEnv`
does.

A problem's environment says how its compiler runs (``_compile_command``),
how its output is run and timed (``_measure``), and where its kernels come
from (``suite_modules``). A kernel is code: the environment compiles and runs
it (docs/security.md); the suite's kernels ship with the package.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from gymnasium import spaces

from mlbridge.gym.compiler_env import EnvOptions
from mlbridge.gym.corpus_modules import EnvError, SkipModule
from mlbridge.gym.episode_limits import runner_ms
from mlbridge.gym.modules import Module
from mlbridge.gym.served_compilation import (
    Outcome,
    ServedCompilerEnv,
    ServedEpisode,
    SessionPolicy,
    StepResult,
)
from mlbridge.llvm.driver import RunResult, run_served
from mlbridge.problems.capabilities import Answer, AnswerTable
from mlbridge.problems.problem import Problem
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import ToolError, run_tool

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "CHANGED_RESULT",
    "Baseline",
    "EnvError",
    "TimedKernelEnv",
    "answer_value",
    "kernel_modules",
]

#: What :meth:`TimedKernelEnv.deploy`'s error says of a kernel whose
#: checksum the model changed.
CHANGED_RESULT = "the model changed the result"

#: Outcomes remembered per environment (then forgotten all at once).
MAX_REMEMBERED = 100_000
#: What a suite gives: (split, directory to write the sources in) -> modules.
Suite = Callable[[str, Path], List[Module]]


def kernel_modules(
    sources: Sequence[Tuple[str, str, str, str]], directory: Path, suffix: str
) -> List[Module]:
    """Writes each ``(name, project, split, text)`` as ``NAME.SUFFIX`` in
    ``directory``: a module per kernel."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name, project, split, text in sources:
        path = directory / f"{name}{suffix}"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        out.append(Module(name, path, project, split))
    return out


def answer_value(answer: Answer, features: Dict[str, np.ndarray]) -> np.ndarray:
    """What the compiler gets for one action's declared answer: a number, a
    row, or a copy of the input it names."""
    if isinstance(answer, str):
        return np.array(features[answer], dtype=np.int64).reshape(-1)
    return np.array(answer, dtype=np.int64).reshape(-1)


@dataclass(frozen=True)
class Baseline:
    """The compiler's own decisions on a kernel: its runnable program, its
    fastest time when first measured, and its checksum."""

    runnable: Path
    seconds: float
    checksum: str


class TimedKernelEnv(ServedCompilerEnv):
    """The life cycle of a timed kernel (see the module's docstring).

    - ``modules``: kernel sources (paths, or :class:`Module`); else the
      kernels of the problem's suite in ``split`` (``corpus`` must be None:
      the suite is the problem's corpus), the first ``max_programs`` of them;
      ``quick`` changes nothing (every kernel is small), ``cache_dir`` is
      refused (kernels are built in the work directory).
    - ``rounds``: runs of a built kernel (and of its default build), the
      fastest counts.
    - ``step_timeout`` (default 60): seconds the compiler may take to reach
      its next decision; ``episode_timeout`` (default 600): seconds an
      episode's compilation may last (the agent's time included), and the
      runner's deadline.
    """

    metadata: Dict[str, Any] = {"render_modes": []}
    #: The problem (its features, answers and name).
    problem: Problem
    #: The plugin's features: (name, element count), in its order.
    features: Tuple[Tuple[str, int], ...]
    #: The problem's kernels (see :data:`Suite`).
    suite: Suite
    #: The suffix of a kernel's compiled output.
    output_suffix = ".out"
    #: The key of the answer in the plugin's decision log.
    log_answer = "answer"
    #: The same answers give the same ``info`` (gymnasium's determinism
    #: check): no wall times of the compilation in it.
    timing_info = False

    refused_options = {"cache_dir": "kernels are built in the work directory"}

    def __init__(
        self,
        modules: Optional[Sequence[Union[Module, str, os.PathLike]]] = None,
        *,
        rounds: int = 3,
        plugin: Optional[Union[str, os.PathLike]] = None,
        **options: Unpack[EnvOptions],
    ) -> None:
        answers = self.problem.get(AnswerTable)
        if answers is None:
            raise TypeError(f"{self.problem.name}: a timed-kernel problem has an answer table")
        self._answers: AnswerTable = answers
        self._take_common(options)
        corpus, split, max_programs = (
            self.choice.corpus,
            self.choice.split,
            self.choice.max_programs,
        )
        if corpus is not None:
            raise EnvError(
                f"{self.problem.name} runs on its own kernel suite, not on a corpus "
                f"(corpus={str(corpus)!r}); give kernel sources as modules"
            )
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise ValueError(f"rounds must be a whole number >= 1, got {rounds!r}")
        self.rounds = rounds
        self.plugin = Path(plugin) if plugin is not None else self._default_plugin()
        work = Path(self._make_workdir(f"mlbridge-{self.problem.name}-"))
        if modules is None:
            self.modules = type(self).suite(split, work / "kernels")
            if not self.modules:
                raise EnvError(f"the {self.problem.name} suite has no {split} kernel")
        else:
            self.modules = [self._as_module(m, split) for m in modules]
            if not self.modules:
                raise EnvError("no module given")
        if max_programs is not None:
            self.modules = self.modules[:max_programs]
        self._by_name = {m.name: m for m in self.modules}
        if len(self._by_name) != len(self.modules):
            raise EnvError("two kernels have the same name")
        self._baselines: Dict[str, Baseline] = {}
        #: The outcome of each kernel and sequence of answers already
        #: measured: the same answers give the same program, timed once.
        self._outcomes: Dict[Tuple[str, Tuple[Tuple[int, ...], ...]], Tuple[float, Dict]] = {}
        self._given: List[Tuple[int, ...]] = []
        #: Outcomes measured (programs run), and outcomes given again.
        self.measured = 0
        self.reused = 0
        self._episode: Optional[ServedEpisode] = None
        self._episodes = 0
        #: The observation's names: each feature, ``name[i]`` for element i
        #: of a feature of several.
        self.feature_names: Tuple[str, ...] = tuple(
            name if count == 1 else f"{name}[{i}]"
            for name, count in self.features
            for i in range(count)
        )
        self.observation_space = self._box(self.feature_names)
        self.action_space = spaces.Discrete(len(self._answers.answers))

    @staticmethod
    def _as_module(item: Union[Module, str, os.PathLike], split: str) -> Module:
        if isinstance(item, Module):
            return item
        path = Path(item)
        return Module(path.stem, path, path.stem, split)

    # -- for the problem's environment ---------------------------------------

    def _default_plugin(self) -> Path:
        """The plugin of the installed package (``mlbridge config``)."""
        raise NotImplementedError

    def _compile_command(
        self, module: Module, output: Path, runner: Optional[str], log: Path
    ) -> List[str]:
        """The compiler's command for ``module`` into ``output``, logging its
        decisions to ``log``, its runner ``runner`` (None: its own decisions)."""
        raise NotImplementedError

    def _prepare(self, output: Path) -> Path:
        """Makes the compiled ``output`` runnable (linked, lowered): the
        file :meth:`_measure` runs, removed after the measurements."""
        raise NotImplementedError

    def _measure(self, runnable: Path) -> Tuple[float, str]:
        """Runs the kernel once: seconds and checksum."""
        raise NotImplementedError

    def _read_log(self, path: Path) -> List[Dict[str, Any]]:
        """The plugin's decision log: one dict per decision, with its ``source``."""
        raise NotImplementedError

    def _same_result(self, checksum: str, default: str) -> bool:
        """Whether a checksum equals the default build's."""
        return checksum == default

    # -- measuring -----------------------------------------------------------

    def _build(
        self, module: Module, output: Path, runner: Optional[str]
    ) -> Tuple[Path, List[Dict[str, Any]], float]:
        """Compiles ``module`` into ``output`` with ``runner`` (None: the
        compiler's own decisions) and makes it runnable: the runnable, the
        decisions the plugin logged, the compilation's wall seconds."""
        log = self._log_of(output)
        log.unlink(missing_ok=True)
        try:
            start = time.monotonic()
            run_tool(
                self._compile_command(module, output, runner, log), timeout=self.episode_timeout
            )
            seconds_ = time.monotonic() - start
            decisions = self._read_log(log) if log.exists() else []
            return self._prepare(output), decisions, seconds_
        finally:
            log.unlink(missing_ok=True)
            output.unlink(missing_ok=True)

    def _race(self, runnables: Dict[str, Path]) -> Dict[str, Tuple[float, str]]:
        """Runs every runnable ``rounds`` times, in turn (so that a slower
        spell of the machine falls on all of them): the fastest time of each,
        and its checksum (ValueError when one changes between runs)."""
        best: Dict[str, Tuple[float, str]] = {}
        for _ in range(self.rounds):
            for label, runnable in runnables.items():
                run = self._measure(runnable)
                if label in best and run[1] != best[label][1]:
                    raise ValueError(
                        f"its checksum changed between runs ({best[label][1]}, {run[1]})"
                    )
                if label not in best or run[0] < best[label][0]:
                    best[label] = run
        return best

    def _baseline(self, module: Module) -> Baseline:
        """The compiler's own decisions on ``module``, built and timed once
        per environment (the program is kept to run beside every episode's);
        :class:`SkipModule` when that fails."""
        if module.name not in self._baselines:
            output = Path(self._workdir()) / f"{module.name}.default{self.output_suffix}"
            try:
                runnable, decisions, _ = self._build(module, output, None)
                if not decisions:
                    runnable.unlink(missing_ok=True)
                    raise SkipModule(f"the compiler made no {self.decision_name} in it")
                fastest, checksum = self._race({"default": runnable})["default"]
            except ToolError as err:
                if err.timed_out:
                    raise SkipModule(f"building it took over {self.episode_timeout:g} s") from None
                raise SkipModule(f"it does not build: {err}") from None
            except (OSError, ValueError) as err:
                raise SkipModule(f"it cannot be measured: {err}") from None
            self._baselines[module.name] = Baseline(runnable, fastest, checksum)
        return self._baselines[module.name]

    def default_seconds(self, module: str) -> float:
        """The fastest time of the compiler's own decisions on the kernel
        named ``module`` (measured once per environment)."""
        if module not in self._by_name:
            raise EnvError(f"no module named {module!r}")
        try:
            return self._baseline(self._by_name[module]).seconds
        except SkipModule as skip:
            raise EnvError(f"{module}: {skip}") from None

    # -- deployment ------------------------------------------------------------

    def deploy(self, module: str, runner: str) -> Dict[str, Any]:
        """The kernel named ``module`` compiled with a deployed model (the
        plugin's ``runner``, e.g. ``onnx:policy.onnx``) and with the
        compiler's own decisions, run ``rounds`` times in turn: their fastest
        times, the speedup, the compile times, and per decision the model's
        answer and the features it saw.
        Raises :class:`EnvError` when a build fails, a decision fell back to
        the compiler's, or the checksums differ."""
        if module not in self._by_name:
            raise EnvError(f"no module named {module!r}")
        kernel = self._by_name[module]
        work = Path(self._workdir())
        built: Dict[str, Tuple[Path, List[Dict[str, Any]], float]] = {}
        try:
            for label, chosen in (("default", None), ("model", runner)):
                output = work / f"{module}.deploy-{label}{self.output_suffix}"
                built[label] = self._build(kernel, output, chosen)
            decisions = built["model"][1]
            fallbacks = [d for d in decisions if d["source"] == "fallback"]
            if fallbacks:
                raise EnvError(f"{module}: the model's decisions fell back: {fallbacks[0]}")
            best = self._race({label: b[0] for label, b in built.items()})
        except (ToolError, OSError, ValueError) as err:
            raise EnvError(f"{module}: {err}") from None
        finally:
            for runnable, _, _ in built.values():
                runnable.unlink(missing_ok=True)
        if not self._same_result(best["model"][1], best["default"][1]):
            raise EnvError(
                f"{module}: {CHANGED_RESULT}: checksum {best['model'][1]}, "
                f"{best['default'][1]} with the compiler's own decisions"
            )
        return {
            "module": module,
            "project": kernel.program,
            "default_seconds": best["default"][0],
            "seconds": best["model"][0],
            "speedup": best["default"][0] / best["model"][0],
            "default_compile_seconds": built["default"][2],
            "compile_seconds": built["model"][2],
            "decisions": len(decisions),
            "answers": [d[self.log_answer] for d in decisions],
            "features": [d["features"] for d in decisions],
            "runner_us": sum(float(d.get("runner_us", 0.0)) for d in decisions),
        }

    # -- the episode -----------------------------------------------------------

    def _runner(self, base: str) -> str:
        return str(
            RunnerConfig(
                kind="pipe",
                argument=base,
                connect_timeout_ms=runner_ms(self.step_timeout),
                timeout_ms=runner_ms(self.episode_timeout),
            )
        )

    @staticmethod
    def _log_of(output: Path) -> Path:
        return output.with_name(output.name + ".jsonl")

    def _start(self, module: Module) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Starts ``module``'s compilation up to its first decision; raises
        :class:`SkipModule` when it gives no episode."""
        self._baseline(module)
        self._episodes += 1
        self._given = []
        output = Path(self._workdir()) / f"episode-{self._episodes}{self.output_suffix}"
        episode = ServedEpisode(module, output)
        self._log_of(output).unlink(missing_ok=True)
        workdir, timeout = self._workdir(), self.episode_timeout

        def serve(decide: Any) -> RunResult:
            return run_served(
                lambda base: self._compile_command(
                    module, output, self._runner(base), self._log_of(output)
                ),
                SessionPolicy(decide, episode),
                timeout=timeout,
                open_timeout=self.step_timeout,
                channel_dir=workdir,
                stdout=subprocess.DEVNULL,
                on_start=episode.started,
            )

        event = self._open(episode, serve)
        self._require_features(episode, self._sent_features(episode), self.features, "the plugin")
        return self._hand(episode, event), self._info(episode)

    def _observe(self, features: Dict[str, np.ndarray]) -> np.ndarray:
        arrays = [features[name] for name, _ in self.features]
        return np.concatenate(arrays, axis=None, dtype=np.float32, casting="unsafe")

    def baseline_action(self) -> int:
        """The action keeping the compiler's own decision."""
        return self._answers.keeps_default

    def _state_object(self, scratch: Path) -> Path:
        raise EnvError(
            f"{type(self).__name__} validates every episode itself: a kernel whose "
            "checksum differs from its default build's ends the episode with info['error']"
        )

    def step(self, action: Any) -> StepResult:
        """Answers the current decision with the problem's answer of ``action``."""
        episode = self._running()
        if not self.action_space.contains(action):
            count = len(self._answers.answers)
            return self._fault(
                episode,
                f"invalid action {action!r} (a {type(action).__name__}): "
                f"expected 0..{count - 1}, Discrete({count})",
            )
        value = answer_value(self._answers.answers[int(action)], episode.features)
        self._given.append(tuple(int(v) for v in value))
        return self._answer(episode, value)

    def _problem(self, episode: ServedEpisode, result: RunResult) -> Optional[str]:
        problem = super()._problem(episode, result)
        if problem is not None:
            return problem
        try:
            decisions = self._read_log(self._log_of(episode.output))
        except (OSError, ValueError) as err:
            return f"the plugin's decision log cannot be read: {err}"
        fallbacks = [d for d in decisions if d.get("source") == "fallback"]
        if fallbacks:
            return (
                f"the plugin took its own decision instead of the answer at "
                f"{len(fallbacks)} of {len(decisions)} decisions; stderr: "
                f"{result.stderr.strip()[-2000:]}"
            )
        return None

    def _outcome(self, episode: ServedEpisode, result: RunResult) -> Outcome:
        key = (episode.module.name, tuple(self._given))
        if key in self._outcomes:
            self._log_of(episode.output).unlink(missing_ok=True)
            self.reused += 1
            return self._outcomes[key]
        outcome = self._measured_outcome(episode)
        if not isinstance(outcome, str):
            self.measured += 1
            if len(self._outcomes) >= MAX_REMEMBERED:
                self._outcomes.clear()
            self._outcomes[key] = outcome
        return outcome

    def _measured_outcome(self, episode: ServedEpisode) -> Outcome:
        baseline = self._baseline(episode.module)
        runnable: Optional[Path] = None
        try:
            runnable = self._prepare(episode.output)
            best = self._race({"default": baseline.runnable, "episode": runnable})
        except (ToolError, OSError, ValueError) as err:
            return f"building or running the kernel failed: {err}"
        finally:
            self._log_of(episode.output).unlink(missing_ok=True)
            if runnable is not None:
                runnable.unlink(missing_ok=True)
        (default, _), (measured, checksum) = best["default"], best["episode"]
        if not self._same_result(checksum, baseline.checksum):
            return (
                f"the answers changed the kernel's result: checksum {checksum}, "
                f"{baseline.checksum} with the compiler's own decisions"
            )
        if not (
            math.isfinite(measured) and measured > 0 and math.isfinite(default) and default > 0
        ):
            return f"the kernel's times {default!r}, {measured!r} are not positive numbers"
        reward = math.log(default / measured)
        return reward, {
            "seconds": measured,
            "default_seconds": default,
            "speedup": default / measured,
        }

"""Environments whose episode is one compilation served decision by decision.

The inlining and register-allocation environments run one compiler per
episode; the compiler pauses at every decision and a
:class:`~mlbridge.gym.bridge.DecisionBridge` hands its features to ``step``.
:class:`ServedCompilerEnv` owns what they share: starting the compilation up
to its first question, answering, the faults (a compiler that fails, is
killed, stops answering or outlives its deadline ends the episode with
``truncated=True`` and ``info["error"]``, its process group stopped) and the
end of an episode. A problem's environment says how to start the compiler
(``serve``), what a finished compilation is worth (:meth:`ServedCompilerEnv._outcome`)
and how features become an observation (:meth:`ServedCompilerEnv._observe`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple, Union

import numpy as np

from mlbridge.gym.bridge import BridgeTimeout, DecisionBridge, Finished, Request
from mlbridge.gym.compiler_env import CompilerEnv
from mlbridge.gym.corpus_modules import EnvError, SkipModule
from mlbridge.gym.episode_limits import IDLE_MARGIN
from mlbridge.gym.modules import Module
from mlbridge.llvm.driver import RunResult
from mlbridge.policy import Session
from mlbridge.session import KILL_GRACE_SECONDS, STDERR_TAIL, CompilerSession, exit_message

#: What ``step`` returns.
StepResult = Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]
#: What a finished compilation is worth: (reward, info) or why it is none.
Outcome = Union[Tuple[float, Dict[str, Any]], str]


class ServedEpisode:
    """What one episode holds: its module, output, compiler and bridge."""

    def __init__(self, module: Module, output: Path) -> None:
        self.module = module
        self.output = output
        self.compiler: Optional[CompilerSession] = None
        #: The session header of LLVM's interactive protocol (pipes).
        self.header: Optional[Session] = None
        self.bridge: Optional[DecisionBridge] = None
        self.decisions = 0
        self.done = False
        #: Whether the compilation ended well (its output is kept until the
        #: next reset, for :meth:`ServedCompilerEnv.validate`).
        self.finished = False
        self.observation: Optional[np.ndarray] = None
        self.features: Dict[str, np.ndarray] = {}
        self.agent_seconds = 0.0
        self.handed_at = 0.0  # when the last observation left the environment

    def started(self, compiler: CompilerSession) -> None:
        """``on_start`` of the compilation: the running compiler."""
        self.compiler = compiler

    def stop(self) -> None:
        """Stops the compiler (if it runs) and the serving thread."""
        self.done = True
        if self.compiler is not None:
            self.compiler.kill()
        if self.bridge is not None:
            self.bridge.abandon(join_timeout=KILL_GRACE_SECONDS + 10.0)


class SessionPolicy:
    """The policy a served compilation answers with: the bridge's decisions,
    and the session header of LLVM's protocol (:meth:`begin`) recorded on
    the episode, which names the features."""

    def __init__(self, decide: Any, episode: ServedEpisode) -> None:
        self._decide = decide
        self._episode = episode

    def begin(self, session: Session) -> None:
        self._episode.header = session

    def __call__(self, features: Dict[str, np.ndarray]) -> Any:
        return self._decide(features)


def failure(result: RunResult, episode_timeout: float) -> str:
    """Why a served compilation failed, in one message."""
    if result.timed_out:
        message = f"the compilation ran longer than episode_timeout ({episode_timeout:g} s): killed"
    elif result.returncode != 0:
        message = exit_message(result.returncode)
    else:
        message = "serving the compiler failed"
    host = result.error
    if host and not result.timed_out:
        message += f"; host side: {host}"
    stderr = result.stderr.strip()
    if stderr:
        message += f"; stderr: {stderr[-STDERR_TAIL:]}"
    return message


class ServedCompilerEnv(CompilerEnv):
    """The episode life cycle of a served compilation (see the module's docstring)."""

    step_timeout: float
    episode_timeout: float
    _episode: Optional[ServedEpisode] = None
    #: What the compiler decides, for messages ("call site", "eviction").
    decision_name = "decision"
    #: Whether the last step's ``info`` has the episode's wall times
    #: (``compile_seconds``, ``agent_seconds``).
    timing_info = True

    @property
    def compiler_pid(self) -> Optional[int]:
        """The process id of the running episode's compiler (None: none runs)."""
        episode = self._episode
        if episode is None or episode.done or episode.compiler is None:
            return None
        return episode.compiler.pid

    # -- for the problem's environment ---------------------------------------

    def _observe(self, features: Dict[str, np.ndarray]) -> np.ndarray:
        """The observation of one question's features."""
        raise NotImplementedError

    def _outcome(self, episode: ServedEpisode, result: RunResult) -> Outcome:
        """What the finished compilation of ``episode`` is worth."""
        raise NotImplementedError

    def _problem(self, episode: ServedEpisode, result: RunResult) -> Optional[str]:
        """Why a finished compilation is no valid episode, or None."""
        return None if result.ok else failure(result, self.episode_timeout)

    def _info(self, episode: ServedEpisode) -> Dict[str, Any]:
        return {"module": episode.module.name, "decisions": episode.decisions}

    def _finished_object(self, episode: ServedEpisode, scratch: Path) -> Path:
        """The object file of a finished episode's compilation (its output,
        or one made from it in ``scratch``)."""
        return episode.output

    def _state_object(self, scratch: Path) -> Path:
        episode = self._episode
        if episode is None or not episode.finished:
            raise EnvError(
                "validate() checks the compilation of a finished episode: a served "
                "compilation has an object only once it ends (step until terminated)"
            )
        return self._finished_object(episode, scratch)

    # -- the life cycle ------------------------------------------------------

    def _require_features(
        self, episode: ServedEpisode, sent: Tuple[Any, ...], expected: Tuple[Any, ...], who: str
    ) -> None:
        """The header check every served environment makes once its
        compilation asked its first question: the features ``who`` (the
        compiler, the plugin) ``sent`` must be the observation space's
        (``expected``), else the episode is stopped and EnvError says which."""
        if sent != expected:
            episode.stop()
            raise EnvError(
                f"{episode.module.name}: {who} sent the features {list(sent)}, "
                f"not those of the observation space {list(expected)}"
            )

    @staticmethod
    def _sent_features(episode: ServedEpisode) -> Tuple[Tuple[str, int], ...]:
        """(name, element count) of each feature the session header names."""
        header = episode.header.features if episode.header else ()
        return tuple((spec.name, spec.element_count) for spec in header)

    def _open(
        self, episode: ServedEpisode, serve: Callable[[Callable[..., Any]], RunResult]
    ) -> Request:
        """Starts the episode's compilation (``serve(decide)``) up to its
        first question; raises :class:`SkipModule` when it gives no episode."""
        episode.bridge = DecisionBridge(
            serve,
            timeout=self.step_timeout,
            # after the episode's deadline, which thus names the fault
            idle_timeout=self.episode_timeout + IDLE_MARGIN,
            name=f"mlbridge-{self.decision_name.replace(' ', '-')}-{episode.module.name}",
        )
        self._episode = episode
        try:
            event = episode.bridge.next()
        except BridgeTimeout:
            episode.stop()
            raise SkipModule(
                f"the compiler reached no {self.decision_name} within step_timeout "
                f"({self.step_timeout:g} s): killed"
            ) from None
        if isinstance(event, Finished):
            episode.stop()
            episode.output.unlink(missing_ok=True)
            if event.error is not None:
                raise SkipModule(f"serving failed: {type(event.error).__name__}: {event.error}")
            problem = self._problem(episode, event.result)
            raise SkipModule(
                problem or f"the compiler asked nothing (no {self.decision_name} to decide)"
            )
        assert isinstance(event, Request)
        return event

    def _hand(self, episode: ServedEpisode, request: Request) -> np.ndarray:
        """Makes ``request`` the episode's current question: its observation."""
        episode.features = request.features
        episode.observation = self._observe(request.features)
        episode.handed_at = time.monotonic()
        return episode.observation

    def _running(self) -> ServedEpisode:
        episode = self._episode
        if episode is None or episode.done or episode.bridge is None:
            raise EnvError("no episode is running: call reset() first")
        return episode

    def _answer(self, episode: ServedEpisode, value: Any) -> StepResult:
        """Answers the current question with ``value``: the next observation,
        or the episode's end."""
        assert episode.bridge is not None
        bridge = episode.bridge
        episode.agent_seconds += time.monotonic() - episode.handed_at
        bridge.answer(value)
        episode.decisions += 1
        try:
            event = bridge.next()
        except BridgeTimeout:
            return self._fault(
                episode,
                f"the compiler neither asked nor finished within step_timeout "
                f"({self.step_timeout:g} s): killed",
            )
        if isinstance(event, Request):
            # A compiler driver that died while its front end asks on (gcc's
            # cc1 outlives a killed gcc until it is reaped): a fault.
            gone = None if episode.compiler is None else episode.compiler.poll()
            if gone is not None:
                return self._fault(episode, exit_message(gone) if gone else "the compiler exited")
            return self._hand(episode, event), 0.0, False, False, self._info(episode)
        if event.error is not None:
            return self._fault(
                episode, f"serving failed: {type(event.error).__name__}: {event.error}"
            )
        result: RunResult = event.result
        problem = self._problem(episode, result)
        if problem is not None:
            return self._fault(episode, problem)
        episode.stop()  # joins the serving thread
        try:
            outcome = self._outcome(episode, result)
        except BaseException:
            episode.output.unlink(missing_ok=True)
            raise
        if isinstance(outcome, str):
            return self._fault(episode, outcome)
        episode.finished = True
        reward, extra = outcome
        info = self._info(episode)
        info.update(extra)
        if self.timing_info:
            info.update(compile_seconds=result.wall_seconds, agent_seconds=episode.agent_seconds)
        assert episode.observation is not None
        return episode.observation, float(reward), True, False, info

    def _fault(self, episode: ServedEpisode, message: str) -> StepResult:
        """Ends the episode on a fault: ``truncated=True``, ``info["error"]``."""
        episode.stop()
        episode.output.unlink(missing_ok=True)
        info = self._info(episode)
        info["error"] = message
        assert episode.observation is not None
        return episode.observation, 0.0, False, True, info

    def _end_episode(self) -> None:
        episode, self._episode = getattr(self, "_episode", None), None
        if episode is not None:
            episode.stop()
            episode.output.unlink(missing_ok=True)

"""What every environment of :mod:`mlbridge.gym` shares: a private work
directory, the episode's life cycle (``reset`` ends the running episode and
starts one on a drawn module, ``close`` ends it, releases the compiler
session and removes the directory, and may be called again), and an
observation space of named int64 features seen as float32.

A problem's environment (:mod:`mlbridge.problems`) subclasses
:class:`CompilerEnv` and implements ``_start`` (a module's first
observation, or :class:`~mlbridge.gym.corpus_modules.SkipModule`), and where
it holds more, ``_end_episode`` and ``_release``.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from mlbridge.gym.corpus_modules import EnvError, start_drawn
from mlbridge.gym.episode_limits import FLOAT_MAX, seconds
from mlbridge.gym.modules import Module


class CompilerEnv(gym.Env[np.ndarray, np.int64]):
    """The shared life cycle (see the module's docstring)."""

    modules: List[Module]
    _by_name: Dict[str, Module]
    #: Modules that give no episode, with why.
    skipped: Dict[str, str]
    render_mode: Optional[str]
    #: Deadlines: of a step, and of an episode where the environment has one.
    step_timeout: float
    episode_timeout: float
    _episode: Any = None
    _tmp: Optional[str] = None

    def _take_common(
        self,
        render_mode: Optional[str],
        step_timeout: float,
        episode_timeout: Optional[float] = None,
    ) -> None:
        """Checks and keeps the keywords every environment takes: it renders
        nothing, and its deadlines (per step, per episode when it has one)
        are positive seconds; no module is skipped yet."""
        if render_mode is not None:
            raise ValueError(f"{type(self).__name__} renders nothing (render_mode={render_mode!r})")
        self.render_mode = render_mode
        self.step_timeout = seconds("step_timeout", step_timeout)
        if episode_timeout is not None:
            self.episode_timeout = seconds("episode_timeout", episode_timeout)
        self.skipped = {}

    def _make_workdir(self, prefix: str) -> str:
        """Creates the private work directory (removed by :meth:`close`)."""
        self._tmp = tempfile.mkdtemp(prefix=prefix)
        return self._tmp

    def _workdir(self) -> str:
        if self._tmp is None:
            raise EnvError("the environment is closed")
        return self._tmp

    @staticmethod
    def _box(names: Sequence[str]) -> spaces.Box:
        """The observation space of ``names``: every int64 feature is a finite float32."""
        return spaces.Box(-FLOAT_MAX, FLOAT_MAX, shape=(len(names),), dtype=np.float32)

    @property
    def compiler_pid(self) -> Optional[int]:
        """The process id of the running compiler session (a compiler, a
        service; None: none runs)."""
        return None

    @property
    def module(self) -> Optional[str]:
        """The name of the current (or last) episode's module."""
        return None if self._episode is None else self._episode.module.name

    def baseline_action(self) -> int:
        """The action that keeps the compiler's own decision at the current
        step: playing it every step is the baseline episode."""
        raise NotImplementedError

    def _start(self, module: Module) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Starts an episode on ``module``: its first observation and info."""
        raise NotImplementedError

    def _end_episode(self) -> None:
        """Ends the running episode, if any."""
        self._episode = None

    def _release(self) -> None:
        """Releases what outlives episodes (a server, a service)."""

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Starts an episode on a module drawn with ``self.np_random`` (or
        ``options["module"]``, a module's name); returns its first
        observation."""
        super().reset(seed=seed)
        self._end_episode()
        self._workdir()
        return start_drawn(
            self.modules,
            self._by_name,
            self.skipped,
            (options or {}).get("module"),
            self.np_random,
            self._start,
        )

    def close(self) -> None:
        """Ends the episode and the compiler session and removes the work
        directory; may be called again."""
        self._end_episode()
        self._release()
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit anything may be gone
            pass

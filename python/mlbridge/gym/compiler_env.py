"""What every environment of :mod:`mlbridge.gym` shares: a private work
directory, the episode's life cycle (``reset`` ends the running episode and
starts one on a drawn module, ``close`` ends it, releases the compiler
session and removes the directory, and may be called again), and an
observation space of named int64 features seen as float32.

Every environment takes its modules (the first argument) and the keywords
of :class:`EnvOptions` (which modules otherwise, its deadlines, gymnasium's
render mode) besides its own; :meth:`CompilerEnv._take_common` checks and
keeps them, :meth:`CompilerEnv._load_modules` loads the modules.

A problem's environment (:mod:`mlbridge.problems`) subclasses
:class:`CompilerEnv` and implements ``_start`` (a module's first
observation, or :class:`~mlbridge.gym.corpus_modules.SkipModule`), and where
it holds more, ``_end_episode`` and ``_release``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    ClassVar,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    Union,
)

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from mlbridge.gym.corpus_modules import EnvError, ModuleLike, environment_modules, start_drawn
from mlbridge.gym.episode_limits import FLOAT_MAX, seconds
from mlbridge.gym.modules import Module
from mlbridge.gym.state_validation import ProgramReferences
from mlbridge.llvm.versions import tools
from mlbridge.program_runs import ProgramCheck
from mlbridge.session import ToolError, run_tool

__all__ = ["CompilerEnv", "EnvOptions", "ModuleChoice"]


class EnvOptions(TypedDict, total=False):
    """The keywords every environment takes besides its own (docs/gym.md)."""

    #: When no modules are given: the corpus whose programs are the modules
    #: (a path in any format of :mod:`mlbridge.corpus`; None: the loop's
    #: default corpus, ``$MLBRIDGE_CORPUS`` or ``./.cache/corpus``, with the
    #: bundled demo programs), its ``split`` (``"train"``, ``"validation"``,
    #: ``"held-out"`` or ``"all"``; default ``"train"``), compiled into
    #: ``cache_dir``; ``quick`` (default True) keeps its small programs.
    corpus: Optional[Union[str, os.PathLike]]
    split: str
    quick: bool
    cache_dir: Optional[Union[str, os.PathLike]]
    #: Only a fixed sample of that many programs of the split, its projects
    #: interleaved (a large corpus's first N).
    max_programs: Optional[int]
    #: Seconds the compiler may take to reach its next question (or its end).
    step_timeout: float
    #: Seconds an episode's compilation may last, the agent's time included
    #: (an environment without an episode deadline refuses it).
    episode_timeout: float
    #: gymnasium's render mode: None (an environment renders nothing).
    render_mode: Optional[str]


#: The keywords of :class:`EnvOptions`.
_OPTIONS = frozenset(EnvOptions.__annotations__)


@dataclass(frozen=True)
class ModuleChoice:
    """Which modules an environment compiles when it is given none
    (:class:`EnvOptions`)."""

    corpus: Optional[Union[str, os.PathLike]]
    split: str
    quick: bool
    cache_dir: Optional[Union[str, os.PathLike]]
    max_programs: Optional[int]


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
    #: The programs :meth:`validate` made references of (None: none yet).
    _references: Optional[ProgramReferences] = None
    #: Which modules, when none are given (:meth:`_take_common`).
    choice: ModuleChoice
    #: The deadlines when none are given: of a step, and of an episode
    #: (None: the environment has no episode deadline and refuses one).
    default_step_timeout: ClassVar[float] = 60.0
    default_episode_timeout: ClassVar[Optional[float]] = 600.0
    #: Keywords of :class:`EnvOptions` the environment refuses, with why.
    refused_options: ClassVar[Mapping[str, str]] = {}

    def _take_common(self, options: Mapping[str, Any]) -> None:
        """Checks and keeps the keywords every environment takes
        (:class:`EnvOptions`; TypeError for another keyword, or one the
        environment refuses): it renders nothing, and its deadlines (per
        step, per episode when it has one) are positive seconds; no module
        is skipped yet."""
        name = type(self).__name__
        for key in sorted(set(options) - _OPTIONS):
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
        refused = dict(self.refused_options)
        if self.default_episode_timeout is None:
            refused["episode_timeout"] = "an episode has no deadline (each step has step_timeout)"
        for key in sorted(set(options) & set(refused)):
            raise TypeError(f"{name}() takes no {key}: {refused[key]}")
        render_mode = options.get("render_mode")
        if render_mode is not None:
            raise ValueError(f"{name} renders nothing (render_mode={render_mode!r})")
        self.render_mode = render_mode
        self.step_timeout = seconds(
            "step_timeout", options.get("step_timeout", self.default_step_timeout)
        )
        if self.default_episode_timeout is not None:
            self.episode_timeout = seconds(
                "episode_timeout", options.get("episode_timeout", self.default_episode_timeout)
            )
        self.choice = ModuleChoice(
            options.get("corpus"),
            options.get("split", "train"),
            options.get("quick", True),
            options.get("cache_dir"),
            options.get("max_programs"),
        )
        self.skipped = {}

    def _load_modules(self, modules: Optional[Sequence[ModuleLike]], **how: Any) -> None:
        """Sets :attr:`modules` (``modules``, else those :attr:`choice`
        selects) and the same by name; ``how`` is
        :func:`~mlbridge.gym.corpus_modules.environment_modules`'s
        (``module_flags``, ``clang``, ``validation_aside``)."""
        choice = self.choice
        self.modules, self._by_name = environment_modules(
            modules,
            choice.corpus,
            choice.split,
            choice.quick,
            choice.cache_dir,
            max_programs=choice.max_programs,
            **how,
        )

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

    def validate(self, *, run_timeout: float = 10.0) -> ProgramCheck:
        """Whether the current episode's state still computes what its
        program computes (docs/gym.md, Validation): the state compiled to
        an object, linked into the program in place of the module's ``-O0``
        object, run for at most ``run_timeout`` seconds, its output compared
        with the program's built wholly at ``-O0``. The check's ``status``
        is ``same``, a finding (``mismatch``, ``candidate-crashed``...) or a
        skip (the program does not build, run or end by itself at ``-O0``:
        it has no ``main``, say). Raises :class:`EnvError` when there is no
        state to check (no episode; one that has no object yet)."""
        run_timeout = seconds("run_timeout", run_timeout)
        module = self._checked_module()
        members = [m for m in self.modules if m.program == module.program]
        if module not in members:
            members = [module]
        work = Path(self._workdir()) / "validate"
        if self._references is None:
            clang, linker = self._validation_compilers()
            self._references = ProgramReferences(work, clang, linker, self.step_timeout)
        work.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="state-", dir=work) as tmp:
            state = self._state_object(Path(tmp))
            return self._references.check(module, members, state, run_timeout)

    def _checked_module(self) -> Module:
        """The module of the episode :meth:`validate` checks."""
        episode = self._episode
        if episode is None:
            raise EnvError("no episode to validate: call reset() first")
        module: Module = episode.module
        return module

    def _state_object(self, scratch: Path) -> Path:
        """The current state of the episode's module as an object file (made
        in ``scratch`` when it is not one already); raises :class:`EnvError`
        when there is none."""
        raise EnvError(f"{type(self).__name__} has no validate()")

    def _make_state_object(
        self, command: Sequence[str], timeout: float, what: str, source: str
    ) -> None:
        """Runs ``command`` (``what``, for messages), which makes the state's
        object from ``source``; raises :class:`EnvError` naming the episode's
        module when it fails."""
        try:
            run_tool(list(command), timeout=timeout, what=what)
        except ToolError as err:
            name = self._checked_module().name
            raise EnvError(f"{name}: {source} made no object: {err}") from None

    def _validation_compilers(self) -> Tuple[str, str]:
        """The C compiler and the C++ driver that build and link the
        references of :meth:`validate`."""
        llvm = tools()
        return llvm.clang, llvm.clangxx

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
        self._references = None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit anything may be gone
            pass

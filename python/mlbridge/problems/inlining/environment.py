"""``mlbridge/Inlining-v0``: inlining for size on stock clang (docs/gym.md).

One episode compiles one module with ``clang -Oz -c`` of one LLVM major
(``llvm``: 19 or 16; default: the newest whose mlbridge parts are
installed). LLVM's own ML inline advisor pauses at every call site and
sends its features over a pipe channel (:func:`mlbridge.llvm.run_compiler`:
LLVM's interactive mode on 19, mlbridge's plugin and its pipe runner on 16,
which has no interactive mode), or over gRPC from mlbridge's plugin
(``transport="grpc"``); a :class:`DecisionBridge` hands them to
:meth:`InliningEnv.step`, and the action is the advisor's answer. When the
compiler is done, the reward compares the ``.text`` of the object with that
of plain ``clang -Oz -c`` of the same module.

Every fault (an invalid action, a compiler that crashes, is killed or stops
answering, an episode that runs too long) ends the episode with
``truncated=True`` and ``info["error"]``, the compiler's process group
stopped; nothing waits without a deadline.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from gymnasium import spaces

from mlbridge import child_process
from mlbridge.errors import CodecError
from mlbridge.gym.compiler_env import EnvOptions
from mlbridge.gym.corpus_modules import EnvError
from mlbridge.gym.episode_limits import runner_ms
from mlbridge.gym.modules import Module
from mlbridge.gym.served_compilation import (
    Outcome,
    ServedCompilerEnv,
    ServedEpisode,
    SessionPolicy,
    StepResult,
    failure,
)
from mlbridge.llvm import INLINING, size_cap
from mlbridge.llvm.driver import RunResult, run_compiler
from mlbridge.llvm.outcomes import SIZE_METRICS, OutcomeError, object_sizes
from mlbridge.llvm.plugin_settings import InlinePluginSettings, check_defers_when
from mlbridge.llvm.plugin_stats import read_inline_stats
from mlbridge.llvm.versions import LlvmTools, check_plugin_major, major_of_command, tools
from mlbridge.policy import Session
from mlbridge.problems.inlining import DEFAULT_FEATURE
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import STDERR_TAIL, ToolError, run_session, run_tool

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DEFAULT_FEATURE", "EnvError", "InliningEnv"]

#: How the compiler's questions reach the environment.
TRANSPORTS = ("pipe", "grpc")
#: The sizes of an object the reward may count (keys of
#: :func:`mlbridge.llvm.outcomes.object_sizes`).
#: The module compiled at construction to read the compiler's feature list.
_PROBE_SOURCE = "static int f(int x) { return x * 3 + 1; }\nint g(int x) { return f(x) - f(-x); }\n"


class _Served(SessionPolicy):
    """The inliner's session policy: it asks for LLVM's own decision too."""

    def __init__(self, decide: Any, episode: ServedEpisode, include_default: bool) -> None:
        super().__init__(decide, episode)
        self.wants_default = include_default


class _GrpcServed:
    """What the env's gRPC server serves: the running episode's bridge.

    The plugin falls back to LLVM's advice when the policy fails and goes
    on compiling, so a failure (an abandoned episode) stops the compiler
    here, as :func:`run_compiler` does for pipes.
    """

    def __init__(self) -> None:
        self.episode: Optional["_Episode"] = None
        self.decide: Any = None

    def __call__(self, features: Dict[str, np.ndarray]) -> Any:
        episode, decide = self.episode, self.decide
        if episode is None or decide is None:
            raise EnvError("no episode is running")
        if episode.header_names is None:
            episode.header_names = tuple(features)
        try:
            return decide(features)
        except BaseException as err:
            episode.policy_error = f"{type(err).__name__}: {err}"
            if episode.compiler is not None:
                episode.compiler.kill()
            raise


class _Episode(ServedEpisode):
    """An inlining episode: with the gRPC transport, the plugin's statistics,
    the features of its first request and a failure of the policy."""

    def __init__(self, module: Module, output: Path) -> None:
        super().__init__(module, output)
        #: The plugin's statistics of the compilation (gRPC transport).
        self.stats = output.with_name(output.name + ".stats.jsonl")
        self.header_names: Optional[Tuple[str, ...]] = None  # gRPC: the first request's
        self.policy_error: Optional[str] = None  # gRPC: the policy failed


def _run_plugin(
    command: List[str],
    environ: Dict[str, str],
    timeout: float,
    on_start: Any,
) -> RunResult:
    """Runs a compiler that asks mlbridge's plugin (no channel to serve):
    a compiler session with its stdout discarded, killed after ``timeout``."""
    return RunResult.of(run_session(command, timeout=timeout, env=environ, on_start=on_start), {})


_PROBED: Dict[Tuple[str, bool, int, Optional[Path], bool], Tuple[str, ...]] = {}
_PROBE_LOCK = threading.Lock()


def probe_features(
    clang: str,
    include_default: bool = True,
    llvm: Optional[LlvmTools] = None,
    through_plugin: bool = False,
) -> Tuple[str, ...]:
    """The inliner features ``clang`` (of ``llvm``: its major and, below 17
    or ``through_plugin``, the plugin serving it) sends, in its order: read
    from the header of one compilation of a two-function program (once per
    process)."""
    llvm = llvm or tools()
    key = (clang, include_default, llvm.major, llvm.plugin, through_plugin)
    with _PROBE_LOCK:
        if key in _PROBED:
            return _PROBED[key]
        header: List[Session] = []

        class Probe:
            wants_default = include_default

            def begin(self, session: Session) -> None:
                header.append(session)

            def __call__(self, features: Dict[str, np.ndarray]) -> int:
                return 0

        with tempfile.TemporaryDirectory(prefix="mlbridge-probe-") as tmp:
            source = os.path.join(tmp, "probe.c")
            with open(source, "w", encoding="utf-8") as out:
                out.write(_PROBE_SOURCE)
            result = run_compiler(
                [clang, "-Oz", "-c", source, "-o", os.path.join(tmp, "probe.o")],
                {INLINING: Probe()},
                include_default=include_default,
                size_increase_threshold=size_cap.NO_CAP,
                timeout=120.0,
                channel_dir=tmp,
                llvm=llvm.major,
                plugin=llvm.plugin,
                through_plugin=through_plugin,
            )
        if not result.ok or not header:
            raise EnvError(
                f"cannot read the inliner's features from {clang}: "
                + (failure(result, 120.0) if not result.ok else "it sent no header")
            )
        specs = header[0].features
        wide = [s.name for s in specs if s.element_count != 1]
        if wide:
            raise EnvError(f"{clang} sends inliner features of several values: {wide}")
        # The plugin (LLVM 16) always sends LLVM's decision.
        _PROBED[key] = tuple(s.name for s in specs if s.name != DEFAULT_FEATURE or include_default)
        return _PROBED[key]


class InliningEnv(ServedCompilerEnv):
    """Inlining for size on stock clang; see docs/gym.md for the reference.

    - ``modules``: the modules (:class:`mlbridge.gym.modules.Module`, or paths
      of bitcode files), all used; else the programs of the corpus that the
      keywords of :class:`~mlbridge.gym.compiler_env.EnvOptions` select,
      compiled by :func:`prepare_modules`.
    - ``validation_aside``: a corpus without validation programs gets a
      stable share of its training programs as validation ones, which the
      ``"train"`` split then leaves out (``mlbridge train`` validates on them).
    - ``include_default``: LLVM's own decision is the last feature.
    - ``step_timeout`` (default 120): seconds the compiler may take to reach
      the next call site (or its end); ``episode_timeout`` (default 3600):
      seconds an episode's compilation may last, the agent's time included.
    - ``size_increase_threshold``: LLVM's size cap on the ML inliner (None:
      lifted, every call site is asked).
    - ``size_metric``: the size the reward counts (:data:`~mlbridge.llvm.outcomes.SIZE_METRICS`):
      ``"text"`` (default: the code alone, as the shipped ``inlining-size``
      model was trained and ``mlbridge train`` trains) or ``"allocated"``
      (every section of the object that occupies the loaded image, what a
      user's binary grows by).
    - ``transport``: ``"pipe"`` (LLVM's interactive mode; on LLVM 16
      mlbridge's plugin and its pipe runner) or ``"grpc"`` (mlbridge's
      plugin asking the environment's in-process gRPC server over a unix
      socket).
    - ``llvm``: the LLVM major (16 or 19; default: that of ``clang`` when its
      name says one, else the newest with mlbridge parts installed);
      ``clang`` defaults to that major's (``clang-16``...);
      ``plugin``: mlbridge's plugin for it (default: ``mlbridge config
      --plugin --llvm N``), used by the gRPC transport and on LLVM 16.
    - ``defers_when``: call sites the compiler decides as LLVM would without
      asking the agent (one of :data:`mlbridge.llvm.plugin_settings.DEFERS_WHEN`;
      None: it asks at every call site), as the plugin does for a deployed
      model that says it answers LLVM's decision there
      (``Deferral``): episodes then hold the decisions such a
      model makes, and the reward the code it gives. Served by mlbridge's
      plugin on any LLVM major.
    - ``through_plugin``: the pipe transport reaches the agent through
      mlbridge's plugin on any LLVM major, as a deployed model is asked
      (implied by ``defers_when``): the observation then holds
      ``callee_basic_block_count`` as LLVM computes it, which LLVM 19's
      interactive mode overwrites with ``inlining_default`` (and
      :func:`mlbridge.llvm.advisors.restore_inlining_default` reports as -1).
    """

    metadata: Dict[str, Any] = {"render_modes": []}
    decision_name = "call site"
    default_step_timeout = 120.0
    default_episode_timeout = 3600.0

    def __init__(
        self,
        modules: Optional[Sequence[Union[Module, str, os.PathLike]]] = None,
        *,
        validation_aside: bool = False,
        include_default: bool = True,
        size_increase_threshold: Optional[float] = None,
        size_metric: str = "text",
        clang: Optional[str] = None,
        transport: str = "pipe",
        plugin: Optional[Union[str, os.PathLike]] = None,
        llvm: Optional[int] = None,
        defers_when: Optional[str] = None,
        through_plugin: bool = False,
        **options: Unpack[EnvOptions],
    ) -> None:
        self._take_common(options)
        if size_increase_threshold is not None and not size_increase_threshold >= 1.0:
            raise ValueError("size_increase_threshold must be >= 1 (or None: no cap)")
        if size_metric not in SIZE_METRICS:
            raise ValueError(
                f"size_metric must be one of {', '.join(SIZE_METRICS)}, got {size_metric!r}"
            )
        #: Which size of the object the reward counts.
        self.size_metric = size_metric
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
        check_defers_when(defers_when)
        self.transport = transport
        self.defers_when = defers_when
        #: Whether the compiler asks through mlbridge's plugin.
        self.through_plugin = transport == "grpc" or defers_when is not None or through_plugin
        if llvm is None and clang is not None:
            llvm = major_of_command(clang)
        #: The LLVM major's tools, and the plugin given for it (or None).
        self.llvm = tools(llvm, Path(plugin) if plugin is not None else None)
        self.plugin: Optional[str] = None
        if self.through_plugin:
            if plugin is None:
                from mlbridge.native import plugin_path

                plugin = plugin_path(llvm=self.llvm.major)
            self.plugin = str(plugin)
            if not os.path.isfile(self.plugin):
                raise EnvError(f"the plugin {self.plugin} does not exist")
            self.llvm = tools(self.llvm.major, Path(self.plugin))
        self.include_default = include_default
        self.size_increase_threshold = size_increase_threshold
        self.clang = clang or self.llvm.clang
        if self.plugin is not None:  # a plugin of another major crashes clang
            check_plugin_major(self.clang, Path(self.plugin), self.llvm.major)
        self._load_modules(modules, clang=self.clang, validation_aside=validation_aside)
        self._oz_sizes: Dict[str, Dict[str, int]] = {}
        self._make_workdir("mlbridge-inlining-")
        self._episode: Optional[_Episode] = None
        self._episodes = 0
        self._server: Any = None  # gRPC: the running server
        self._grpc_policy = _GrpcServed()
        try:
            #: The observation's features, in LLVM's order (read from the compiler).
            self.feature_names: Tuple[str, ...] = probe_features(
                self.clang, include_default, self.llvm, self.through_plugin
            )
        except BaseException:
            self.close()
            raise
        self.observation_space = self._box(self.feature_names)
        self.action_space = spaces.Discrete(2)

    # -- the episode's compiler ---------------------------------------------

    def _command(self, module: Module, output: Path, plugin: Optional[str] = None) -> List[str]:
        return [
            self.clang,
            "-Oz",
            *([f"-fpass-plugin={plugin}"] if plugin else []),
            "-c",
            "-w",
            *module.codegen_flags(),
            str(module.bitcode),
            "-o",
            str(output),
        ]

    def _grpc_target(self) -> str:
        """The env's gRPC server (started on first use), as the plugin dials it."""
        if self._server is None:
            from mlbridge.grpc_server import start_server

            self._server = start_server(
                self._grpc_policy,
                f"unix:{os.path.join(self._workdir(), 'model.sock')}",
                workers=4,
                max_streams=3,
                session_idle_timeout=self.episode_timeout,
                stream_idle_timeout=self.episode_timeout,
            )
        return str(self._server.target)

    def _serve_fn(self, episode: _Episode, command: List[str]) -> Any:
        """``serve(decide)`` for the bridge: one compilation of the episode."""
        threshold = (
            size_cap.NO_CAP
            if self.size_increase_threshold is None
            else self.size_increase_threshold
        )
        include_default, workdir = self.include_default, self._workdir()
        timeout, llvm, defers_when = self.episode_timeout, self.llvm, self.defers_when
        through_plugin = self.through_plugin
        if self.transport == "pipe":

            def serve(decide: Any) -> RunResult:
                return run_compiler(
                    command,
                    {INLINING: _Served(decide, episode, include_default)},
                    include_default=include_default,
                    size_increase_threshold=threshold,
                    timeout=timeout,
                    channel_dir=workdir,
                    stdout=subprocess.DEVNULL,
                    on_start=episode.started,
                    llvm=llvm.major,
                    plugin=llvm.plugin,
                    defers_when=defers_when,
                    through_plugin=through_plugin,
                )

            return serve
        deadline_ms = runner_ms(timeout, extra_ms=1000)
        runner = RunnerConfig(
            kind="grpc",
            argument=self._grpc_target(),
            streaming=True,
            connect_timeout_ms=deadline_ms,
            timeout_ms=deadline_ms,
        )
        settings = InlinePluginSettings(
            runner,
            stats=str(episode.stats),
            size_increase_threshold=threshold,
            defers_when=defers_when,
        )
        environ = child_process.child_environment(settings.environment())
        served = self._grpc_policy

        def serve_grpc(decide: Any) -> RunResult:
            served.episode, served.decide = episode, decide
            return _run_plugin(command, environ, timeout, episode.started)

        return serve_grpc

    def _problem(self, episode: ServedEpisode, result: RunResult) -> Optional[str]:
        """Why a finished compilation is no valid episode, or None."""
        if not result.ok:
            return failure(result, self.episode_timeout)
        assert isinstance(episode, _Episode)
        if episode.policy_error is not None:
            return f"the policy failed: {episode.policy_error}"
        if self.transport == "grpc":
            # The plugin's statistics say whether the policy decided; its
            # stderr is for people.
            try:
                stats = read_inline_stats(episode.stats)
            except (CodecError, OSError) as err:
                return f"the plugin's statistics are unreadable: {err}"
            finally:
                episode.stats.unlink(missing_ok=True)
            if stats.modules == 0:
                return (
                    "the plugin did not serve the module (its runner could not be "
                    f"created); stderr: {result.stderr.strip()[-STDERR_TAIL:]}"
                )
            if stats.fallbacks:
                return f"the plugin fell back to LLVM's advice: {stats.first_error}"
        return None

    def _start(self, module: Module) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Starts ``module``'s compilation up to its first call site; raises
        :class:`~mlbridge.gym.corpus_modules.SkipModule` when it gives no episode."""
        self._episodes += 1
        output = Path(self._workdir()) / f"episode-{self._episodes}.o"
        episode = _Episode(module, output)
        # Over pipes, run_compiler loads the plugin itself where it serves.
        loads = self.plugin if self.transport == "grpc" else None
        serve = self._serve_fn(episode, self._command(module, output, loads))
        event = self._open(episode, serve)
        if episode.header is not None:
            sent = tuple(s.name for s in episode.header.features)
        else:
            sent = episode.header_names or ()
        # mlbridge's plugin (gRPC, LLVM 16) always sends LLVM's decision too.
        names = tuple(n for n in sent if n != DEFAULT_FEATURE or self.include_default)
        self._require_features(episode, names, self.feature_names, "the compiler")
        return self._hand(episode, event), self._info(episode)

    def _observe(self, features: Dict[str, np.ndarray]) -> np.ndarray:
        arrays = [features[n] for n in self.feature_names]  # one value each (probed)
        return np.concatenate(arrays, axis=None, dtype=np.float32, casting="unsafe")

    # -- gymnasium API -------------------------------------------------------

    def baseline_action(self) -> int:
        """LLVM's own decision at the current call site (needs ``include_default``)."""
        episode = self._running()
        if not self.include_default:
            raise EnvError("LLVM's own decision is observed with include_default=True only")
        return int(np.asarray(episode.features[DEFAULT_FEATURE]).reshape(-1)[0] != 0)

    def step(self, action: Any) -> StepResult:
        """Answers the current call site (0: do not inline, 1: inline)."""
        episode = self._running()
        if not self.action_space.contains(action):
            return self._fault(
                episode,
                f"invalid action {action!r} (a {type(action).__name__}): "
                f"expected 0 (do not inline) or 1 (inline), Discrete(2)",
            )
        return self._answer(episode, int(action))

    def _outcome(self, episode: ServedEpisode, result: RunResult) -> Outcome:
        try:
            sizes = object_sizes(str(episode.output))
            oz = self._oz_size(episode.module)
        except (OutcomeError, EnvError, OSError) as err:
            return f"measuring the object failed: {err}"
        metric = self.size_metric
        reward = (oz[metric] - sizes[metric]) / max(oz[metric], 1)
        return reward, {
            "text_size": sizes["text"],
            "oz_text_size": oz["text"],
            "allocated_size": sizes["allocated"],
            "oz_allocated_size": oz["allocated"],
        }

    def oz_text_size(self, module: str) -> int:
        """``.text`` bytes of plain ``clang -Oz -c`` of the module named
        ``module`` (measured once per environment)."""
        if module not in self._by_name:
            raise EnvError(f"no module named {module!r}")
        return self._oz_size(self._by_name[module])["text"]

    def _oz_size(self, module: Module) -> Dict[str, int]:
        """Both sizes of plain ``clang -Oz -c`` of ``module`` (measured once)."""
        if module.name not in self._oz_sizes:
            output = Path(self._workdir()) / "oz.o"
            try:
                run_tool(
                    self._command(module, output),
                    timeout=self.episode_timeout,
                    what=f"plain {self.clang} -Oz",
                    stdout=subprocess.DEVNULL,
                )
            except ToolError as err:
                raise EnvError(f"{module.name}: {err}") from None
            try:
                self._oz_sizes[module.name] = object_sizes(str(output))
            finally:
                output.unlink(missing_ok=True)
        return self._oz_sizes[module.name]

    def _validation_compilers(self) -> Tuple[str, str]:
        return self.clang, self.llvm.clangxx

    def _release(self) -> None:
        server, self._server = getattr(self, "_server", None), None
        if server is not None:
            server.stop(grace=None)

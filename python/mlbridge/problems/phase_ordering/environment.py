"""``mlbridge/PhaseOrdering-v0``: pass ordering for IR size on LLVM 19 (docs/gym.md).

One long-lived ``mlbridge-phase-service`` per environment (the C++ compiler
service of docs/phase-ordering.md, linked against LLVM 19) holds the module
between steps. It asks its runner, a pipe channel in mlbridge's extended
protocol, for the next command at every turn: a :class:`PipeHost` serves it
in a :class:`DecisionBridge` thread, and :meth:`PhaseOrderingEnv.step` is
the answer (APPLY an action), :meth:`~PhaseOrderingEnv.reset` LOADs the next
module, :meth:`~PhaseOrderingEnv.snapshot` / :meth:`~PhaseOrderingEnv.restore`
copy the module in the service's memory. The observation is what the service
sends: the 56 Autophase features and the instruction counts, computed in C++.
The reward is the instruction count's reduction in units of the module's
``-Oz`` instruction count (docs/gym.md, Reward); with ``size_metric=
"allocated"`` (or ``"text"``), the reduction of the object's size after
clang's ``-Oz`` code generation of the module, in units of plain ``clang
-Oz``'s object of it.

Every fault (an invalid action, an action the service reports as failed, a
service that crashes, is killed or stops answering) ends the episode with
``truncated=True`` and ``info["error"]``; a service that is gone is replaced
at the next reset; nothing waits without a deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from gymnasium import spaces

from mlbridge.channel import ChannelError, make_fifos, open_host_ends
from mlbridge.codecs import FORMATS
from mlbridge.gym.bridge import BridgeTimeout, DecisionBridge, Finished, Request
from mlbridge.gym.compiler_env import CompilerEnv, EnvOptions
from mlbridge.gym.corpus_modules import (
    EnvError,
    ModuleLike,
    SkipModule,
)
from mlbridge.gym.episode_limits import IDLE_MARGIN, runner_ms
from mlbridge.gym.modules import Module
from mlbridge.llvm.outcomes import SIZE_METRICS, OutcomeError, object_sizes
from mlbridge.llvm.versions import tools
from mlbridge.pipe_host import PipeHost
from mlbridge.policy import Session
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import STDERR_TAIL, CompilerSession, ToolError, exit_message, run_tool
from mlbridge.tensor_spec import TensorSpec

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["IDLE_TIMEOUT", "ROLLBACKS", "EnvError", "PhaseOrderingEnv", "describe_service"]

#: ``rollback`` -> the service's ``--rollback``: where an action that breaks
#: the module leaves it (the episode ends either way).
ROLLBACKS = {"step": "previous", "pristine": "pristine"}
#: Seconds the service waits for the agent's next command (its runner's
#: ``call_timeout_ms``) before it exits: the agent's thinking time between
#: two steps, or between an episode's end and the next reset.
IDLE_TIMEOUT = 3600.0
#: Seconds a service has to exit after END (or after its channel closed).
_END_TIMEOUT = 10.0
#: Seconds a service has to exit after SIGTERM before SIGKILL.
_KILL_GRACE = 2.0
#: The service's ``--list-actions`` keys the environment reads.
_DESCRIPTION_KEYS = ("actions", "default_action", "features", "commands", "statuses", "inputs")

#: The commands the environment sends.
_COMMANDS = ("apply", "load", "snapshot", "restore", "end")
#: The one-value inputs the environment reads.
_SCALARS = ("instcount", "initial_instcount", "baseline_instcount", "status", "steps")

_DESCRIBED: Dict[str, Dict[str, Any]] = {}
_DESCRIBE_LOCK = threading.Lock()


def describe_service(service: Union[str, os.PathLike]) -> Dict[str, Any]:
    """The JSON ``service --list-actions`` prints (actions, features,
    commands, statuses, inputs, ...): read once per process and path."""
    key = os.path.abspath(service)
    with _DESCRIBE_LOCK:
        if key in _DESCRIBED:
            return _DESCRIBED[key]
        try:
            done = run_tool([key, "--list-actions"], timeout=60.0, what=f"{key} --list-actions")
        except ToolError as err:
            raise EnvError(str(err)) from None
        try:
            description = json.loads(done.stdout)
            missing = [k for k in _DESCRIPTION_KEYS if k not in description]
            if missing:
                raise ValueError(f"no {', '.join(missing)}")
            if not description["actions"]:
                raise ValueError("no action")
        except ValueError as err:
            raise EnvError(f"{key} --list-actions printed no usable description: {err}") from None
        _DESCRIBED[key] = description
        return description


@dataclass
class _Exit:
    """How serving a service ended: its exit status, and a host-side error."""

    returncode: Optional[int]
    error: Optional[BaseException] = None


class _ServiceGone(Exception):
    """The service died or stopped answering (it is stopped): the message says how."""


class _ServicePolicy:
    """What the pipe host serves: the bridge's policy, plus the handshake."""

    def __init__(self, decide: Callable[..., Any], service: "_Service") -> None:
        self._decide = decide
        self._service = service

    def begin(self, session: Session) -> None:
        self._service.session = session

    def __call__(self, features: Dict[str, np.ndarray], context: str = "") -> Any:
        return self._decide(features, context)


class _Service:
    """One running ``mlbridge-phase-service``: its compiler session (a
    process group of its own, the end of its stderr), its channel and the
    bridge serving it.

    ``request`` is the observation the service waits on an answer for (None
    when it is gone, or while a command runs).
    """

    def __init__(self, command: List[str], base: str, step_timeout: float, name: str) -> None:
        self.base = base
        self.step_timeout = step_timeout
        self.session: Optional[Session] = None
        self.request: Optional[Request] = None
        self.channel = make_fifos(base)
        try:
            self.compiler = CompilerSession(command, grace=_KILL_GRACE)
        except OSError as err:
            self.channel.close()
            raise EnvError(f"cannot start {command[0]}: {err.strerror or err}") from None
        self.bridge = DecisionBridge(
            self._serve,
            timeout=step_timeout,
            idle_timeout=IDLE_TIMEOUT + IDLE_MARGIN,
            name=name,
        )

    @property
    def pid(self) -> int:
        """The service's process id (also its process group's)."""
        return self.compiler.pid

    def alive(self) -> bool:
        """Whether the service's process still runs."""
        return self.compiler.poll() is None

    def _serve(self, decide: Callable[..., Any]) -> _Exit:
        """The bridge's thread: serves the channel until the service closes it."""
        host = PipeHost(_ServicePolicy(decide, self), io_timeout=None)
        error: Optional[BaseException] = None
        try:
            # The watch notices a service that exits before it opened both ends.
            ends = open_host_ends(self.base, self.step_timeout, None, self.alive)
        except ChannelError as err:
            error = err
        else:
            try:
                host.serve_ends(ends)
            except Exception as err:  # noqa: BLE001 - reported through the exit
                error = err
                self.kill()
            finally:
                ends.close()
        try:
            self.compiler.wait(_END_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
        return _Exit(self.compiler.returncode, error)

    def kill(self) -> None:
        """Stops the service's process group: SIGTERM and SIGCONT (a stopped
        service handles them too), SIGKILL when it has not exited after
        :data:`_KILL_GRACE` seconds; returns once it has exited."""
        self.compiler.stop()

    def stderr_tail(self) -> str:
        """The end of what the service wrote to stderr."""
        return self.compiler.tail(STDERR_TAIL)

    def stop(self) -> None:
        """Kills the service (if it runs), joins the serving thread and
        removes the channel."""
        self.request = None
        self.kill()
        self.bridge.abandon(join_timeout=_END_TIMEOUT + _KILL_GRACE)
        self.channel.close()

    def end(self, command: int) -> None:
        """Sends ``command`` (END) when the service waits for one, gives it
        :data:`_END_TIMEOUT` seconds to exit, then :meth:`stop`."""
        if self.request is not None and self.alive():
            self.request = None
            self.bridge.answer({"command": command, "argument": 0})
            try:
                self.compiler.wait(_END_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        self.stop()

    def gone(self, event: Optional[Finished]) -> str:
        """Why the service ended (``event``: how serving ended, None: it
        stopped answering), in one message; then stops it."""
        if event is None:
            self.stop()
            return (
                f"the compiler service answered nothing within step_timeout "
                f"({self.step_timeout:g} s): killed"
            )
        self.kill()  # it has exited (or is killed now): its stderr is complete
        result = event.result
        error = event.error if event.error is not None else getattr(result, "error", None)
        code = getattr(result, "returncode", None)
        if code is None:
            message = "the compiler service is gone"
        elif code != 0:
            message = exit_message(code, "the compiler service")
        else:
            message = "the compiler service exited"
        stderr = self.stderr_tail()
        if stderr:
            message += f"; stderr: {stderr}"
        if error is not None and code != 0:
            message += f"; host side: {type(error).__name__}: {error}"
        self.stop()
        return message


class _Episode:
    """One episode: its module (index in the service's list), the service
    that loaded it and the counts the reward needs."""

    def __init__(self, module: Module, index: int, service: _Service) -> None:
        self.module, self.index, self.service = module, index, service
        self.observation = np.zeros(0, np.float32)
        self.instcount = self.initial = self.baseline = self.steps = 0
        #: Object sizes in the environment's size metric (0: instructions).
        self.size = self.initial_size = self.oz_size = 0
        self.action: Optional[str] = None  # the last step's action
        self.done = False


def deploy_inputs(
    names: Sequence[str], kept: List[int]
) -> Tuple[List[TensorSpec], Optional[List[int]]]:
    """The deployed model's inputs: the tensors the service feeds it, as in
    training, whose concatenation is the environment's observation
    (``names``); ``kept`` indexes that concatenation."""
    from mlbridge.native import phase_service_path
    from mlbridge.problems.phase_ordering.chooser import service_inputs

    return service_inputs(describe_service(phase_service_path())), kept


def _scalar(features: Dict[str, np.ndarray], name: str) -> int:
    return int(features[name].reshape(-1)[0])


class PhaseOrderingEnv(CompilerEnv):
    """Pass ordering for IR size on LLVM 19 or 16; see docs/gym.md for the reference.

    - ``modules``: the modules (:class:`mlbridge.gym.modules.Module`, or paths
      of bitcode or textual IR files), all used; else the programs of the
      corpus that the keywords of :class:`~mlbridge.gym.compiler_env.EnvOptions`
      select, compiled by :func:`~mlbridge.gym.modules.prepare_modules`.
    - ``max_steps``: actions per episode (then it is truncated).
    - ``step_timeout`` (default 60): seconds the service may take to answer
      a command (an action, a load with its ``-Oz`` baseline, its start);
      an episode has no deadline of its own (``episode_timeout`` is refused).
    - ``llvm``: the LLVM major (16 or 19; default: the newest with mlbridge
      parts installed): its service's passes, its clang making the modules.
    - ``service``: the ``mlbridge-phase-service`` program (None:
      ``mlbridge config --phase-service --llvm N``).
    - ``rollback``: ``"step"`` (a step that breaks the module is undone) or
      ``"pristine"`` (back to the module as loaded, ``steps`` 0).
    - ``format``: the serialisation on the channel (``"bitstream"``,
      ``"json"``, ``"protobuf"``).
    - ``size_metric``: what the reward counts: ``"instcount"`` (default: IR
      instructions, no code generation) or a size of the object that
      clang's ``-Oz`` code generation makes of the module after each step
      (:data:`~mlbridge.llvm.outcomes.SIZE_METRICS`: ``"allocated"``, what a
      user's binary grows by, or ``"text"``), against plain ``clang -Oz``'s
      object of the module (the harness identity makes ``default<Oz>``'s
      reward end at exactly 0).
    """

    metadata: Dict[str, Any] = {"render_modes": []}
    default_episode_timeout = None

    def __init__(
        self,
        modules: Optional[Sequence[ModuleLike]] = None,
        *,
        max_steps: int = 32,
        service: Optional[Union[str, os.PathLike]] = None,
        rollback: str = "step",
        format: str = "bitstream",
        llvm: Optional[int] = None,
        size_metric: str = "instcount",
        **options: Unpack[EnvOptions],
    ) -> None:
        self._service: Optional[_Service] = None
        self._episode: Optional[_Episode] = None
        self._take_common(options)
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)):
            raise ValueError(f"max_steps must be a whole number, got {max_steps!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        if rollback not in ROLLBACKS:
            raise ValueError(f"rollback must be one of {', '.join(ROLLBACKS)}, got {rollback!r}")
        if format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
        if size_metric not in ("instcount", *SIZE_METRICS):
            raise ValueError(
                f"size_metric must be one of instcount, {', '.join(SIZE_METRICS)}, "
                f"got {size_metric!r}"
            )
        self.max_steps = int(max_steps)
        self.rollback, self.format = rollback, format
        #: What the reward counts (instructions, or a size of the object).
        self.size_metric = size_metric
        #: Module name -> plain ``clang -Oz``'s object sizes of it.
        self._oz_sizes: Dict[str, Dict[str, int]] = {}
        #: The LLVM major's tools (its clang makes the modules the service reads).
        self.llvm = tools(llvm)
        if service is None:
            from mlbridge.native import NativeError, phase_service_path

            try:
                service = phase_service_path(llvm=self.llvm.major)
            except NativeError as err:
                raise EnvError(f"no compiler service: {err}") from None
        if os.sep not in str(service):  # a program's name: looked up on PATH
            service = shutil.which(service) or service
        #: The ``mlbridge-phase-service`` program.
        self.service = os.path.abspath(service)
        if not os.path.isfile(self.service):
            raise EnvError(f"the compiler service {self.service} does not exist")
        self._load_modules(modules, clang=self.llvm.clang)
        self._index = {m.name: i for i, m in enumerate(self.modules)}
        for module in self.modules:
            path = os.path.abspath(module.bitcode)
            if "\n" in path or "\r" in path or path != path.rstrip(" \t"):
                raise EnvError(f"module {module.name}: its path {path!r} cannot be listed")
        description = describe_service(self.service)
        try:
            #: The actions, in the service's order: (name, ``opt -passes=`` pipeline).
            self.actions: List[Tuple[str, str]] = [
                (str(a["name"]), str(a["pipeline"])) for a in description["actions"]
            ]
            #: The action that runs ``default<Oz>`` (the last).
            self.default_action = int(description["default_action"])
            self._commands = {str(k): int(v) for k, v in description["commands"].items()}
            missing = sorted(set(_COMMANDS) - set(self._commands))
            if missing:
                raise ValueError(f"no command {', '.join(missing)}")
            self._status_names = {int(v): str(k) for k, v in description["statuses"].items()}
            #: Slots of :meth:`snapshot` / :meth:`restore` (0 .. snapshot_slots - 1).
            self.snapshot_slots = int(description.get("snapshot_slots", 8))
            self._inputs: List[Tuple[str, Tuple[int, ...]]] = [
                (str(s["name"]), tuple(int(d) for d in s["shape"])) for s in description["inputs"]
            ]
            missing = sorted(set(_SCALARS) - {name for name, _ in self._inputs})
            if missing:
                raise ValueError(f"no input {', '.join(missing)}")
            autophase = [str(f) for f in description["features"]]
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise EnvError(
                f"{self.service} --list-actions: unexpected description: {err!r}"
            ) from None
        names: List[str] = []
        for name, shape in self._inputs:
            size = int(np.prod(shape))
            if name == "autophase" and size == len(autophase):
                names += autophase
            elif size == 1:
                names.append(name)
            else:
                names += [f"{name}[{i}]" for i in range(size)]
        #: The observation's features: the service's inputs in its order.
        self.feature_names: Tuple[str, ...] = tuple(names)
        self._input_names = [name for name, _ in self._inputs]
        self.observation_space = self._box(self.feature_names)
        self.action_space = spaces.Discrete(len(self.actions))
        self._services = 0
        workdir = self._make_workdir("mlbridge-phase-")
        if "," in workdir:  # the runner configuration's argument ends at a comma
            self.close()
            raise EnvError(f"the temporary directory {workdir} has a comma in its path")
        self._list = os.path.join(workdir, "modules.txt")
        with open(self._list, "w", encoding="utf-8") as listing:
            listing.write("# the environment's modules, in order\n")
            for module in self.modules:
                listing.write(os.path.abspath(module.bitcode) + "\n")

    # -- the service ---------------------------------------------------------

    @property
    def service_pid(self) -> Optional[int]:
        """The process id of the running compiler service (None: none runs)."""
        service = self._service
        if service is None or service.request is None or not service.alive():
            return None
        return service.pid

    @property
    def compiler_pid(self) -> Optional[int]:
        """:attr:`service_pid`, by the name every environment has."""
        return self.service_pid

    def _command_line(self, base: str) -> List[str]:
        connect_ms = runner_ms(self.step_timeout)
        runner = RunnerConfig(
            kind="pipe",
            argument=base,
            protocol="extended",
            format=self.format,
            connect_timeout_ms=connect_ms,
            timeout_ms=int(IDLE_TIMEOUT * 1000),
        )
        return [
            self.service,
            "--runner",
            str(runner),
            "--modules",
            self._list,
            "--rollback",
            ROLLBACKS[self.rollback],
            "--output",
            self._state_file(),
        ]

    def _state_file(self) -> str:
        """Where the service WRITEs the current module (for :meth:`validate`)."""
        return os.path.join(self._workdir(), "state.bc")

    def _running_service(self) -> _Service:
        """The service waiting for a command: the running one, or a new one
        (raises :class:`EnvError` when it cannot start)."""
        service = self._service
        if service is not None and service.request is not None and service.alive():
            return service
        self._stop_service()
        self._services += 1
        workdir = self._workdir()
        base = os.path.join(workdir, f"service-{self._services}")
        service = _Service(
            self._command_line(base),
            base,
            self.step_timeout,
            f"mlbridge-phase-service-{self._services}",
        )
        self._service = service
        try:
            event = service.bridge.next()
        except BridgeTimeout:
            event = None
        if not isinstance(event, Request):
            message = service.gone(event)
            self._service = None
            raise EnvError(f"the compiler service {self.service} did not start: {message}")
        specs = [] if service.session is None else list(service.session.features)
        got = [(s.name, tuple(s.shape)) for s in specs]
        if got != self._inputs:
            service.stop()
            self._service = None
            raise EnvError(
                f"the compiler service sends the inputs {got}, not those of "
                f"its --list-actions {self._inputs}"
            )
        service.request = event
        return service

    def _stop_service(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            service.stop()

    def _run(self, service: _Service, command: str, argument: int) -> Request:
        """Answers the service's request with ``command`` and returns its next
        observation; raises :class:`_ServiceGone` (the service stopped) when
        it died or answered nothing within ``step_timeout``."""
        if service.request is None:
            raise _ServiceGone("the compiler service is gone")
        service.request = None
        service.bridge.answer({"command": self._commands[command], "argument": int(argument)})
        try:
            event = service.bridge.next()
        except BridgeTimeout:
            event = None
        if not isinstance(event, Request):
            if self._service is service:
                self._service = None
            raise _ServiceGone(service.gone(event))
        service.request = event
        return event

    def _status(self, request: Request) -> int:
        return _scalar(request.features, "status")

    def _failure(self, request: Request) -> str:
        status = self._status(request)
        name = self._status_names.get(status, "unknown")
        return f"status {status} ({name}): {request.context or 'no message'}"

    # -- episodes ------------------------------------------------------------

    def _start(self, module: Module) -> Tuple[np.ndarray, Dict[str, Any]]:
        """LOADs ``module`` (a fresh service when the last one is gone, and
        once more when loading ends the service); raises :class:`SkipModule`
        when it gives no episode."""
        index = self._index[module.name]
        for attempt in (1, 2):
            service = self._running_service()
            try:
                request = self._run(service, "load", index)
            except _ServiceGone as gone:
                if attempt == 2:
                    raise SkipModule(f"loading it ended the compiler service: {gone}") from None
                continue
            if self._status(request) != 0:
                raise SkipModule(f"the compiler service cannot load it: {self._failure(request)}")
            episode = _Episode(module, index, service)
            self._update(episode, request)
            self._episode = episode
            if self.size_metric != "instcount":
                try:
                    episode.oz_size = self._oz_object_size(module)
                    episode.size = episode.initial_size = self._state_size()
                except EnvError as err:
                    self._episode = None
                    raise SkipModule(str(err)) from None
            return episode.observation, self._info(episode)
        raise AssertionError("unreachable")

    def _observe(self, features: Dict[str, np.ndarray]) -> np.ndarray:
        arrays = [features[n] for n in self._input_names]
        return np.concatenate(arrays, axis=None, dtype=np.float32, casting="unsafe")

    def _update(self, episode: _Episode, request: Request) -> None:
        features = request.features
        episode.observation = self._observe(features)
        episode.instcount = _scalar(features, "instcount")
        episode.initial = _scalar(features, "initial_instcount")
        episode.baseline = _scalar(features, "baseline_instcount")
        episode.steps = _scalar(features, "steps")

    def _oz_object_size(self, module: Module) -> int:
        """The size of plain ``clang -Oz``'s object of ``module`` (cached)."""
        sizes = self._oz_sizes.get(module.name)
        if sizes is None:
            output = self._sizes_dir() / "oz.o"
            command = [self.llvm.clang, "-Oz", "-c", "-w", *module.codegen_flags()]
            what = f"{self.llvm.clang} -Oz"
            self._make_state_object(
                [*command, str(module.bitcode), "-o", str(output)],
                self.step_timeout,
                what,
                "the module",
            )
            sizes = self._oz_sizes[module.name] = self._sizes_of(output)
        return sizes[self.size_metric]

    def _state_size(self) -> int:
        """The size of the current module's object (clang's ``-Oz`` code
        generation of it)."""
        return self._sizes_of(self._state_object(self._sizes_dir()))[self.size_metric]

    def _sizes_dir(self) -> Path:
        """Where the objects measured for the reward go (in the work directory)."""
        scratch = Path(self._workdir()) / "sizes"
        scratch.mkdir(exist_ok=True)
        return scratch

    def _sizes_of(self, path: Path) -> Dict[str, int]:
        try:
            return object_sizes(str(path))
        except OutcomeError as err:
            raise EnvError(f"{self._checked_module().name}: {err}") from None

    def _info(self, episode: _Episode) -> Dict[str, Any]:
        info: Dict[str, Any] = {"module": episode.module.name}
        if episode.action is not None:
            info["action"] = episode.action
        info.update(
            instcount=episode.instcount,
            initial_instcount=episode.initial,
            baseline_instcount=episode.baseline,
            steps=episode.steps,
        )
        if self.size_metric != "instcount":
            info.update(
                size=episode.size, initial_size=episode.initial_size, oz_size=episode.oz_size
            )
        return info

    def _end(
        self, episode: _Episode, error: Optional[str] = None
    ) -> Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]:
        """The last step of ``episode``: truncated, with ``oz_ratio`` (and the error)."""
        episode.done = True
        info = self._info(episode)
        if self.size_metric == "instcount":
            info["oz_ratio"] = episode.baseline / max(1, episode.instcount)
        else:
            info["oz_ratio"] = episode.oz_size / max(1, episode.size)
        if error is not None:
            info["error"] = error
        return episode.observation, 0.0, False, True, info

    # -- gymnasium API -------------------------------------------------------

    def baseline_action(self) -> int:
        """The action running ``default<Oz>``: the reward's own baseline."""
        return self.default_action

    def step(self, action: Any) -> Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]:
        """APPLYs action ``action`` (an index of :attr:`actions`) to the module."""
        episode = self._episode
        if episode is None or episode.done:
            raise EnvError("no episode is running: call reset() first")
        if not self.action_space.contains(action):
            episode.action = None
            count = len(self.actions)
            return self._end(
                episode,
                f"invalid action {action!r} (a {type(action).__name__}): expected an "
                f"action index, 0 to {count - 1}, of Discrete({count})",
            )
        index = int(action)
        name = self.actions[index][0]
        episode.action = name
        try:
            request = self._run(episode.service, "apply", index)
        except _ServiceGone as gone:
            return self._end(episode, f"{name}: {gone}")
        if self._status(request) != 0:
            failure = self._failure(request)
            self._update(episode, request)
            return self._end(episode, f"{name} failed: {failure}")
        previous = episode.instcount
        self._update(episode, request)
        if self.size_metric == "instcount":
            reward = (previous - episode.instcount) / max(1, episode.baseline)
        else:
            previous = episode.size
            try:
                episode.size = self._state_size()
            except EnvError as err:
                return self._end(episode, f"{name}: {err}")
            reward = (previous - episode.size) / max(1, episode.oz_size)
        if episode.steps >= self.max_steps:
            observation, _, _, truncated, info = self._end(episode)
            return observation, float(reward), False, truncated, info
        return episode.observation, float(reward), False, False, self._info(episode)

    # -- snapshots -------------------------------------------------------------

    def _loaded(self) -> _Episode:
        """The episode whose module the running service holds."""
        self._workdir()
        episode = self._episode
        if episode is None:
            raise EnvError("no module is loaded: call reset() first")
        if episode.service is not self._service or episode.service.request is None:
            raise EnvError("the compiler service of this episode is gone: call reset()")
        return episode

    def _slot(self, slot: Any) -> int:
        if isinstance(slot, bool) or not isinstance(slot, (int, np.integer)):
            raise ValueError(f"a snapshot slot is a whole number, got {slot!r}")
        if not 0 <= slot < self.snapshot_slots:
            raise ValueError(f"snapshot slots are 0 to {self.snapshot_slots - 1}, got {slot}")
        return int(slot)

    def _slot_command(self, episode: _Episode, command: str, slot: int) -> Request:
        try:
            request = self._run(episode.service, command, slot)
        except _ServiceGone as gone:
            episode.done = True
            raise EnvError(f"{command}({slot}): {gone}") from None
        if self._status(request) != 0:
            raise EnvError(f"{command}({slot}) failed: {self._failure(request)}")
        return request

    def snapshot(self, slot: int = 0) -> None:
        """Copies the current module and its step count into ``slot`` (in
        the service's memory; a reset drops every slot)."""
        episode = self._loaded()
        self._slot_command(episode, "snapshot", self._slot(slot))

    def restore(self, slot: int = 0) -> np.ndarray:
        """Makes a copy of ``slot`` the current module (the slot keeps it)
        and returns its observation; the episode goes on from there (also
        after it ended), the next reward counted from its instruction count."""
        episode = self._loaded()
        request = self._slot_command(episode, "restore", self._slot(slot))
        self._update(episode, request)
        if self.size_metric != "instcount":
            episode.size = self._state_size()
        episode.action = None
        episode.done = False
        return episode.observation

    # -- validation --------------------------------------------------------------

    def write_bitcode(self, path: Union[str, os.PathLike]) -> Path:
        """Writes the current module as bitcode to ``path`` (CompilerGym's
        ``env.write_bitcode``): the service's WRITE, with the module's
        use-list order, so that clang compiles it as it would have in one
        process (docs/gym.md, Validation)."""
        episode = self._loaded()
        if "write" not in self._commands:
            raise EnvError(f"{self.service} has no WRITE command")
        state = Path(self._state_file())
        state.unlink(missing_ok=True)
        self._slot_command(episode, "write", 0)
        shutil.move(str(state), os.fspath(path))
        return Path(path)

    def _state_object(self, scratch: Path) -> Path:
        """The current module through clang's ``-Oz`` code generation alone
        (the module's passes are the episode's)."""
        episode = self._loaded()
        state = self.write_bitcode(scratch / "state.bc")
        output = scratch / "state.o"
        command = [
            self.llvm.clang,
            "-Oz",
            "-Xclang",
            "-disable-llvm-passes",
            "-c",
            "-w",
            *episode.module.codegen_flags(),
            str(state),
            "-o",
            str(output),
        ]
        what = f"{self.llvm.clang} -Oz"
        self._make_state_object(command, self.step_timeout, what, "the written module")
        return output

    def _validation_compilers(self) -> Tuple[str, str]:
        return self.llvm.clang, self.llvm.clangxx

    # -- resources -------------------------------------------------------------

    def _release(self) -> None:
        """Ends the service (END, then killed if it does not exit)."""
        service, self._service = getattr(self, "_service", None), None
        if service is not None:
            service.end(self._commands["end"])

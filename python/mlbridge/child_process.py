"""The package's one way to start a child process: it dies with its parent.

Every compiler, service, host or tool the package runs is started by
:func:`popen` (or :func:`run`, :func:`subprocess.run`'s twin), and so:

- **dies with this process**, whatever kills it (SIGKILL included), on
  Linux: the child sets ``PR_SET_PDEATHSIG(SIGKILL)`` between fork and exec,
  then exits at once if its parent already died before that (the race the
  signal cannot cover). Linux sends that signal when the *thread* that forked
  the child ends, not the process, so children are forked from a thread that
  lives as long as the process: the main thread when it asks, else (a
  gymnasium environment's serving thread, a compile pool's threads) one
  spawner thread started on first use. A child may thus outlive the thread
  that asked for it, never the process.
- runs in a **session of its own** (so its own process group), and signals
  go to the whole group (:meth:`Child.send_signal`, ``terminate``, ``kill``):
  what the child started goes with it. Before the child is reaped (``wait``,
  ``poll``, ``communicate``), whatever it left in its group is killed, while
  its pid, not yet free, can name no other group; leaving ``with child:``
  kills the group first. So every exit path (normal end, exception,
  timeout) stops the whole group, then reaps.
- starts from **this process's environment without the plugins' variables**
  (:func:`child_environment`; the default of ``env``): a variable the user
  set for mlbridge's plugins in their own builds (``MLBRIDGE_INLINE_LOG``,
  ``MLBRIDGE_INLINE_DEFERS_WHEN``, ``MLBRIDGE_GCC_RUNNER``...) never reaches a
  compiler mlbridge runs, which gets exactly the settings its caller adds.
  ``env=os.environ`` passes the environment unchanged (``mlbridge llvm``
  does, to the user's own command, when it loads no plugin itself).

Elsewhere than Linux the child only gets its own process group (no parent
death signal), and what a child left in its group after a normal exit is
not killed (that needs ``waitid(WNOWAIT)``).

Limits: the signal reaches the child, not what it forks in turn (clang's
``-fno-integrated-cc1`` front end, a linker); those are stopped with the
group on every exit path of this process, but not when it is SIGKILLed.
A Python child that another library starts (a ``multiprocessing`` worker)
arms the same signal itself with :func:`die_with_parent`, and is started
through :func:`from_lasting_thread`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, TypeVar

__all__ = [
    "Child",
    "child_environment",
    "die_with_parent",
    "from_lasting_thread",
    "is_plugin_variable",
    "popen",
    "run",
]

T = TypeVar("T")

#: ``<linux/prctl.h>``: the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1
#: What popen sets itself (``process_group``: Python 3.11+).
_OWN_KEYWORDS = ("preexec_fn", "start_new_session", "process_group")
#: Seconds between two looks at a child waited for with a timeout (as Popen).
_MAX_POLL_DELAY = 0.05


def _load_prctl() -> Optional[Callable[..., int]]:
    """libc's ``prctl``, loaded once, before any fork (None: not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.PyDLL(None, use_errno=True).prctl  # PyDLL: the GIL stays held
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _load_prctl()
#: waitid(WNOWAIT): a child's exit seen without reaping it (not on macOS).
_CAN_PEEK = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")


def die_with_parent(parent: int) -> None:
    """Makes this process get SIGKILL when the thread of ``parent`` that
    started it ends (Linux; elsewhere nothing); exits at once when its
    parent is no longer ``parent`` (it died before the signal was armed).

    :func:`popen` runs it in every child between fork and exec; a Python
    child started by another library calls it first thing.
    """
    if _PRCTL is None:
        return
    _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


# -- the environment ---------------------------------------------------------------

#: The prefixes of the variables mlbridge's plugins read, one per plugin
#: (``MLBRIDGE_<PLUGIN>_<OPTION>``: src/llvm/PluginOptions.cpp,
#: src/gcc/PluginOptions.cpp, src/mlir/TilingPass.cpp).
PLUGIN_PREFIXES: Tuple[str, ...] = ("MLBRIDGE_INLINE_", "MLBRIDGE_GCC_", "MLBRIDGE_MLIR_")
#: The variables the compiler-side tools read: the interactive host's
#: statistics file (tools/interactive_host).
TOOL_VARIABLES: Tuple[str, ...] = ("MLBRIDGE_HOST_STATS",)


def is_plugin_variable(name: str) -> bool:
    """Whether one of mlbridge's plugins, or a tool a compiler runs under,
    reads the environment variable ``name`` (the package's own,
    ``MLBRIDGE_PREFIX``, ``MLBRIDGE_CACHE``..., are not theirs)."""
    return name.startswith(PLUGIN_PREFIXES) or name in TOOL_VARIABLES


def child_environment(
    settings: Optional[Mapping[str, str]] = None, base: Optional[Mapping[str, str]] = None
) -> Dict[str, str]:
    """The environment of a child: ``base`` (default: this process's)
    without the variables mlbridge's plugins read (:func:`is_plugin_variable`),
    then ``settings``, what the call means (the plugin's runner, its
    statistics file...)."""
    environ = os.environ if base is None else base
    kept = {name: value for name, value in environ.items() if not is_plugin_variable(name)}
    kept.update(settings or {})
    return kept


# -- the spawner thread -----------------------------------------------------------


class _Spawner:
    """A daemon thread, started once per process, that runs the starts asked
    for by threads other than the main thread."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        thread = threading.Thread(target=self._serve, name="mlbridge-spawner", daemon=True)
        thread.start()

    def _serve(self) -> None:
        while True:
            start, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(start())
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                future.set_exception(err)

    def submit(self, start: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((start, future))
        return future


_spawner: Optional[_Spawner] = None
_spawner_lock = threading.Lock()


def _forget_spawner() -> None:
    """In a forked child: the parent's spawner thread does not exist there."""
    global _spawner, _spawner_lock
    _spawner, _spawner_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spawner)


def _the_spawner() -> _Spawner:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = _Spawner()
        return _spawner


def from_lasting_thread(
    start: Callable[[], T], abandon: Optional[Callable[[T], object]] = None
) -> T:
    """``start()`` (which starts a child process) run in a thread that lives
    as long as this process: this one when it is the main thread, else the
    spawner thread. When the caller is interrupted while it waits (e.g.
    KeyboardInterrupt), ``abandon`` gets what ``start`` returns once it
    returns."""
    if threading.current_thread() is threading.main_thread():
        return start()
    future = _the_spawner().submit(start)
    try:
        return future.result()
    except BaseException:
        if abandon is not None:
            future.add_done_callback(functools.partial(_abandon, abandon))
        raise


def _abandon(abandon: Callable[[T], object], future: Future[T]) -> None:
    if not future.cancelled() and future.exception() is None:
        abandon(future.result())


# -- the child ----------------------------------------------------------------------


#: What :func:`_peek` sees of a child.
_RUNNING, _EXITED, _REAPED = "running", "exited", "reaped"


def _peek(pid: int, block: bool) -> str:
    """The child ``pid``: running, exited but not reaped (its pid, still
    taken, names its group alone), or reaped already (another thread: its
    pid may be anyone's). Reaps nothing."""
    flags = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
    try:
        return _RUNNING if os.waitid(os.P_PID, pid, flags) is None else _EXITED
    except ChildProcessError:
        return _REAPED


def _signal_group(pgid: int, sig: int) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(pgid, sig)
        else:  # pragma: no cover - no process groups (Windows)
            os.kill(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Child(subprocess.Popen[Any]):
    """A child started by :func:`popen`: a :class:`subprocess.Popen` whose
    signals go to its whole process group, which kills what is left of that
    group before reaping the child, and which leaving ``with`` stops."""

    def send_signal(self, sig: int) -> None:
        """Sends ``sig`` to the child's process group (nothing once the
        child has been reaped: its pid may name another process by then)."""
        self.poll()
        if self.returncode is None:
            _signal_group(self.pid, sig)

    def terminate(self) -> None:
        """SIGTERM to the group, then SIGCONT (a stopped member handles it too)."""
        self.send_signal(signal.SIGTERM)
        self.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL to the group."""
        self.send_signal(signal.SIGKILL)

    def poll(self) -> Optional[int]:
        if self.returncode is None and _CAN_PEEK and _peek(self.pid, block=False) == _EXITED:
            _signal_group(self.pid, signal.SIGKILL)  # what it left, before its pid is free
        return super().poll()

    def wait(self, timeout: Optional[float] = None) -> int:
        if self.returncode is None and _CAN_PEEK and self._await_exit(timeout) == _EXITED:
            _signal_group(self.pid, signal.SIGKILL)  # what it left, before its pid is free
        return super().wait(timeout)

    def stop(self, grace: float = 0.0) -> int:
        """Stops the group and reaps the child: :meth:`terminate`, up to
        ``grace`` seconds to exit (none: at once), then :meth:`kill`."""
        if grace > 0 and self.poll() is None:
            self.terminate()
            try:
                return self.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        return self.wait()

    def __exit__(self, exc_type: Any, value: Any, traceback: Any) -> None:
        """Kills the group (if it still runs), closes the pipes, reaps."""
        self.kill()
        super().__exit__(exc_type, value, traceback)

    def _await_exit(self, timeout: Optional[float]) -> str:
        """:data:`_EXITED` (not reaped) or :data:`_REAPED` once the child
        has exited; :class:`subprocess.TimeoutExpired` after ``timeout`` s."""
        if timeout is None:
            return _peek(self.pid, block=True)
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while True:
            state = _peek(self.pid, block=False)
            remaining = deadline - time.monotonic()
            if state != _RUNNING:
                return state
            if remaining <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            delay = min(delay * 2, remaining, _MAX_POLL_DELAY)
            time.sleep(delay)


def popen(args: Any, **kwargs: Any) -> Child:
    """``subprocess.Popen(args, **kwargs)`` as a :class:`Child`: in a session
    of its own, killed when this process dies (Linux), forked from a thread
    that lives as long as the process. ``preexec_fn``, ``start_new_session``
    and ``process_group`` are popen's to set; ``env`` defaults to
    :func:`child_environment` (``os.environ``: unchanged)."""
    taken = [key for key in _OWN_KEYWORDS if key in kwargs]
    if taken:
        raise TypeError(f"popen sets {', '.join(taken)} itself")
    if kwargs.get("env") is None:
        kwargs["env"] = child_environment()
    kwargs["start_new_session"] = True
    if _PRCTL is not None:
        kwargs["preexec_fn"] = functools.partial(die_with_parent, os.getpid())
    return from_lasting_thread(lambda: Child(args, **kwargs), abandon=Child.stop)


def run(
    args: Any,
    *,
    input: Any = None,
    capture_output: bool = False,
    timeout: Optional[float] = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """:func:`subprocess.run` with the child of :func:`popen`: on a timeout
    or any exception its whole group is killed and reaped, and it dies with
    this process."""
    if input is not None:
        if kwargs.get("stdin") is not None:
            raise ValueError("stdin and input arguments may not both be used.")
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        if kwargs.get("stdout") is not None or kwargs.get("stderr") is not None:
            raise ValueError("stdout and stderr arguments may not be used with capture_output.")
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with popen(args, **kwargs) as child:
        try:
            stdout, stderr = child.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            child.stop()  # communicate() kept the output so far in the exception
            raise
        returncode = child.wait()
    if check and returncode:
        raise subprocess.CalledProcessError(returncode, args, stdout, stderr)
    return subprocess.CompletedProcess(args, returncode, stdout, stderr)

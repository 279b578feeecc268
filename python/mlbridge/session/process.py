"""One running compiler: its process group, deadline, stderr and end.

Every compiler (or compiler-side service, or tool) the package runs for more
than a one-shot command is a :class:`CompilerSession`, started by
:func:`mlbridge.child_process.popen` and so in a process group of its own
that dies with this process. The session

- closes the compiler's stdin and keeps the end of its stderr (the last
  :data:`STDERR_KEEP` bytes; read by a thread so that the compiler never
  blocks on a full pipe), optionally copied to a stream as it comes;
- stops the whole group on every exit path: :meth:`CompilerSession.kill`
  asks (SIGTERM and SIGCONT: LLVM then removes its temporary outputs) and
  forces (SIGKILL) after :data:`KILL_GRACE_SECONDS`, from any thread, without
  waiting; :meth:`CompilerSession.stop` does the same and waits for the end;
- runs to a deadline with :func:`run_session`, which also starts the
  threads that serve the compiler while it runs (the decisions it asks over
  a channel) and, however the run ends (normally, by timeout, by an
  exception or an interrupt), leaves no compiler behind.
"""

from __future__ import annotations

import codecs
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, Any, Callable, List, Mapping, Optional, Sequence, TextIO

from mlbridge import child_process

__all__ = [
    "KILL_GRACE_SECONDS",
    "STDERR_KEEP",
    "CompilerSession",
    "SessionResult",
    "exit_message",
    "run_session",
]

#: Seconds a compiler has to exit after SIGTERM before it gets SIGKILL.
KILL_GRACE_SECONDS = 2.0
#: Bytes of a compiler's stderr a session keeps (the last ones).
STDERR_KEEP = 1 << 20
#: Bytes read from the stderr pipe at once.
_CHUNK = 1 << 16


def exit_message(returncode: int, who: str = "the compiler") -> str:
    """How ``who``, which exited with ``returncode`` (not 0), ended."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"{who} was killed by {name}"
    return f"{who} failed (exit status {returncode})"


@dataclass
class SessionResult:
    """How a compiler run by :func:`run_session` ended."""

    command: List[str]
    returncode: int
    #: The end of its stderr (:data:`STDERR_KEEP` bytes at most), as text.
    stderr: str
    #: Whether it ran past its deadline (it was then killed).
    timed_out: bool = False
    wall_seconds: float = 0.0


class CompilerSession:
    """A running compiler (see the module's docstring).

    ``command`` is started at once, with its stdin closed, ``stdout`` as
    given (default: discarded) and ``env`` (default: this process's
    environment without the plugins' variables,
    :func:`mlbridge.child_process.child_environment`). ``echo`` gets the
    compiler's stderr as it comes. OSError when it cannot start.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        stdout: Any = subprocess.DEVNULL,
        echo: Optional[TextIO] = None,
        grace: float = KILL_GRACE_SECONDS,
    ) -> None:
        self.command = list(command)
        self.grace = grace
        self.proc = child_process.popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
        )
        #: Set once the compiler has exited and been reaped.
        self.exited = threading.Event()
        self._lock = threading.Lock()
        self._killing = False
        self._tail = bytearray()
        stream = self.proc.stderr
        assert stream is not None
        self._reader = threading.Thread(
            target=self._read_stderr,
            args=(stream, echo),
            daemon=True,
            name="mlbridge-compiler-stderr",
        )
        self._reader.start()

    # -- state ---------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The compiler's process id (also its process group's)."""
        return self.proc.pid

    @property
    def returncode(self) -> Optional[int]:
        """Its exit status once reaped (negative: the signal that killed it)."""
        return self.proc.returncode

    def poll(self) -> Optional[int]:
        """Its exit status if it has exited (reaped then), else None."""
        return self.proc.poll()

    def alive(self) -> bool:
        """Whether the compiler has not been seen to exit."""
        return not self.exited.is_set() and self.proc.poll() is None

    # -- ending --------------------------------------------------------------

    def kill(self) -> None:
        """Stops the compiler's process group without waiting: SIGTERM and
        SIGCONT now, SIGKILL when it has not exited after ``grace`` seconds.
        From any thread; nothing once it has exited."""
        with self._lock:
            if self.exited.is_set() or self._killing:
                return
            self._killing = True
            self.proc.terminate()
        threading.Thread(target=self._kill_after_grace, daemon=True, name="compiler-kill").start()

    def _kill_after_grace(self) -> None:
        if not self.exited.wait(self.grace):
            with self._lock:
                if not self.exited.is_set():
                    self.proc.kill()

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for the compiler to exit (its exit status);
        :class:`subprocess.TimeoutExpired` after ``timeout`` seconds."""
        code = self.proc.wait(timeout)
        self.exited.set()
        return code

    def stop(self) -> int:
        """Stops the compiler's process group (as :meth:`kill`) and waits for
        it: its exit status."""
        self.kill()
        return self.wait()

    def stderr(self, timeout: Optional[float] = None) -> str:
        """The end of the compiler's stderr, as text: all of it once the
        compiler has exited (waits up to ``timeout`` seconds for the pipe's
        end, which a child the compiler left may hold open)."""
        if self.exited.is_set():
            self._reader.join(timeout)
        with self._lock:
            return bytes(self._tail).decode("utf-8", "replace")

    def tail(self, characters: int) -> str:
        """The last ``characters`` characters of :meth:`stderr`, stripped."""
        return self.stderr(timeout=1.0).strip()[-characters:]

    def _read_stderr(self, stream: IO[bytes], echo: Optional[TextIO]) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace") if echo is not None else None
        try:
            for chunk in iter(lambda: stream.read1(_CHUNK), b""):  # type: ignore[attr-defined]
                with self._lock:
                    self._tail += chunk
                    if len(self._tail) > STDERR_KEEP:
                        del self._tail[: len(self._tail) - STDERR_KEEP]
                if echo is not None and decoder is not None:
                    echo.write(decoder.decode(chunk))
                    echo.flush()
        except (OSError, ValueError):
            pass  # closed under the reader: the session ended
        finally:
            stream.close()

    def __enter__(self) -> "CompilerSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        """Stops the compiler if it still runs, and reaps it."""
        if self.proc.returncode is None:
            self.stop()
        self.exited.set()


def run_session(
    command: Sequence[str],
    *,
    timeout: Optional[float] = None,
    env: Optional[Mapping[str, str]] = None,
    stdout: Any = subprocess.DEVNULL,
    echo: Optional[TextIO] = None,
    on_start: Optional[Callable[[CompilerSession], None]] = None,
    servers: Sequence[Callable[[CompilerSession], None]] = (),
    grace: float = KILL_GRACE_SECONDS,
) -> SessionResult:
    """Runs ``command`` as a :class:`CompilerSession` to its end or
    ``timeout`` seconds (then it is killed and the result says so).

    ``on_start`` gets the session as soon as the compiler runs (another
    thread may then stop it); each of ``servers`` then runs in a thread of
    its own with the session (serving the compiler's questions; one that
    fails should :meth:`~CompilerSession.kill` it). The servers are joined
    once the compiler has exited. On any exception (an interrupt included)
    the compiler is stopped, the servers are given :data:`KILL_GRACE_SECONDS`
    to end, and the exception goes on.
    """
    start = time.monotonic()
    session = CompilerSession(command, env=env, stdout=stdout, echo=echo, grace=grace)
    started: List[threading.Thread] = []
    timed_out = False
    join_deadline: Optional[float] = None
    # Everything after the compiler started is inside the try: an interrupt
    # at any moment, even while the serving threads start, stops it.
    try:
        try:
            if on_start is not None:
                on_start(session)
            for index, server in enumerate(servers):
                thread = threading.Thread(
                    target=server, args=(session,), daemon=True, name=f"mlbridge-serve-{index}"
                )
                thread.start()
                started.append(thread)
            session.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            session.stop()
    except BaseException:
        session.stop()
        # Do not wait for a server still deciding (the threads are daemons):
        # an interrupted run ends at once.
        join_deadline = time.monotonic() + grace
        raise
    finally:
        session.exited.set()
        for thread in started:
            thread.join(
                None if join_deadline is None else max(0.0, join_deadline - time.monotonic())
            )
    returncode = session.returncode
    assert returncode is not None
    return SessionResult(
        session.command,
        returncode,
        session.stderr(timeout=grace),
        timed_out,
        time.monotonic() - start,
    )

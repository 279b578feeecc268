"""Sessions of the gRPC model server and the limits that bound them.

Clients of :mod:`mlbridge.grpc_server` are untrusted. What one of them can make
the server hold is bounded here, per server (no module-level state):

- :class:`ServerLimits` -- every limit, with its documented default.
- :class:`SessionTable` -- the unary sessions: unguessable 64-bit ids, bound to
  the client that opened them, expired when idle, the stalest idle one evicted
  when the table or the memory budget is full. Every session's memory (its
  tensor buffer, the Python objects of its schema, its context string) is
  reserved in one :class:`mlbridge.limits.MemoryBudget` before it is allocated.
- :class:`Watchdog` -- one thread per server that ends streams idle for too
  long (a stream holds a server thread) and expires idle unary sessions.

Nothing here depends on gRPC: the server passes in how to end a stream.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional

from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import MlbridgeError
from mlbridge.limits import DEFAULT_MAX_BYTES, DEFAULT_SESSION_MEMORY, BudgetError, MemoryBudget
from mlbridge.tensor_spec import TensorSpec

#: Default size of the server's thread pool (one thread per call in flight).
DEFAULT_WORKERS = 16
#: Threads kept free of streams by default, for unary calls and refusals.
RESERVED_WORKERS = 4
#: Default bound on open unary sessions.
DEFAULT_MAX_SESSIONS = 4096
#: Default seconds a unary session may go unused before it is dropped.
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
#: Default seconds a stream may wait for its client before it is ended.
DEFAULT_STREAM_IDLE_TIMEOUT = 300.0

#: Bytes charged per session for its Python objects (measured: ~2 KiB).
SESSION_OVERHEAD = 4096
#: Bytes charged per declared tensor for its Python objects (measured: ~1.3 KiB
#: for the spec, the two numpy views and the memoryview of a 1-d tensor).
TENSOR_OVERHEAD = 2048
#: Bytes charged per dimension of a declared tensor (numpy keeps shape and
#: strides per view; measured ~40 B).
DIMENSION_OVERHEAD = 64


class UnknownSession(MlbridgeError):
    """No open session has this id for this client (NOT_FOUND)."""


def text_footprint(text: str) -> int:
    """Bytes a Python string of ``text`` occupies (what a session keeps)."""
    return sys.getsizeof(text)


def schema_footprint(schema: Any, cap: int) -> int:
    """Bytes the Python objects of a session of ``schema`` take, estimated
    from the mlbridge.v1.Schema message before any of them exists.

    Counting stops once the total exceeds ``cap`` (the budget: the answer is
    then only known to be too large). Tensor buffers are not included
    (:func:`mlbridge.limits.check_schema` gives their size once the specs are
    valid).
    """
    total = SESSION_OVERHEAD + TENSOR_OVERHEAD * (len(schema.inputs) + len(schema.outputs))
    for specs in (schema.inputs, schema.outputs):
        for spec in specs:
            if total > cap:
                return total
            total += DIMENSION_OVERHEAD * len(spec.shape) + text_footprint(spec.name)
    return total


@dataclass(frozen=True)
class ServerLimits:
    """What clients can make one server hold; see docs/grpc.md, "Limits".

    ``max_streams`` None means ``workers - 4`` (at least 1): the other
    threads stay free for unary calls, so streams can never starve them.
    """

    workers: int = DEFAULT_WORKERS
    max_streams: Optional[int] = None
    max_sessions: int = DEFAULT_MAX_SESSIONS
    session_memory: int = DEFAULT_SESSION_MEMORY
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT
    stream_idle_timeout: float = DEFAULT_STREAM_IDLE_TIMEOUT
    max_message_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        if self.workers < 2:
            raise ValueError(
                f"workers must be >= 2 (one for streams, one for unary calls), got {self.workers}"
            )
        if not 1 <= self.stream_limit < self.workers:
            raise ValueError(
                f"max_streams must be between 1 and workers - 1 "
                f"({self.workers - 1}), got {self.max_streams}"
            )
        for name in ("max_sessions", "session_memory", "max_message_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("session_idle_timeout", "stream_idle_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 seconds, got {getattr(self, name)}")

    @property
    def stream_limit(self) -> int:
        """How many streams may be open at once."""
        if self.max_streams is not None:
            return self.max_streams
        return max(1, self.workers - RESERVED_WORKERS)


@dataclass(eq=False)
class Session:
    """The state of one compilation, and what it holds of the server."""

    inputs: List[TensorSpec]
    outputs: List[TensorSpec]
    buffer: TensorBuffer
    #: Packs a scalar answer straight to bytes (single scalar output only).
    pack: Optional[Callable[[Any], Optional[bytes]]] = None
    context: str = ""
    decisions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Bytes reserved in the server's memory budget for this session.
    nbytes: int = 0
    # Kept by SessionTable (unary sessions only):
    session_id: int = 0
    owner: str = ""
    last_used: float = 0.0
    users: int = 0
    dropped: bool = False


class SessionTable:
    """The unary sessions of one server, and its memory budget.

    Sessions are found by id *and* owner (the client identity the server
    derives from the connection): another client's session is as unknown as
    a closed one. Ids are random 64-bit values (never 0). A session in use by
    a call is never expired or evicted; closing it while a call runs frees
    its memory when that call ends.
    """

    def __init__(
        self,
        budget: MemoryBudget,
        max_sessions: int,
        idle_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.budget = budget
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._lock = threading.Lock()
        #: Least recently used first.
        self._sessions: "OrderedDict[int, Session]" = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    # -- memory ----------------------------------------------------------------

    def reserve(self, nbytes: int, what: str) -> None:
        """Take ``nbytes`` from the budget, evicting the stalest idle sessions
        while it does not fit; BudgetError when it cannot fit."""
        while True:
            try:
                self.budget.reserve(nbytes, what)
                return
            except BudgetError:
                if nbytes > self.budget.limit or not self._evict_one():
                    raise

    def release(self, nbytes: int) -> None:
        """Give ``nbytes`` back to the budget."""
        self.budget.release(nbytes)

    def set_context(self, session: Session, context: str) -> None:
        """Replace ``session``'s context, charging its size to the budget.

        Called with the session in use (``use``) or owned by a stream.
        """
        delta = text_footprint(context) - text_footprint(session.context)
        if delta > 0:
            self.reserve(delta, f"a context of {len(context)} characters")
        else:
            self.release(-delta)
        session.nbytes += delta
        session.context = context

    # -- sessions --------------------------------------------------------------

    def add(self, session: Session, owner: str) -> int:
        """Register ``session`` (its ``nbytes`` already reserved) for ``owner``;
        return its new id. When the table is full the stalest idle session is
        evicted; when every session is in use, BudgetError, and the session's
        bytes are released."""
        self.expire()
        with self._lock:
            if len(self._sessions) >= self.max_sessions and not self._evict_locked():
                self.release(session.nbytes)
                raise BudgetError(
                    f"{len(self._sessions)} sessions are open and in use, "
                    f"the limit is {self.max_sessions}"
                )
            session_id = 0
            while session_id == 0 or session_id in self._sessions:
                session_id = secrets.randbits(64)
            session.session_id, session.owner = session_id, owner
            session.last_used = self._clock()
            self._sessions[session_id] = session
        return session_id

    @contextmanager
    def use(self, session_id: int, owner: str) -> Iterator[Session]:
        """The session ``session_id`` of ``owner``, in use for the ``with``
        block; UnknownSession when there is none."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or session.owner != owner:
                raise UnknownSession(f"no open session {session_id}")
            session.users += 1
            session.last_used = self._clock()
            self._sessions.move_to_end(session_id)
        try:
            yield session
        finally:
            with self._lock:
                session.users -= 1
                session.last_used = self._clock()
                if session.dropped:
                    if session.users == 0:
                        self.release(session.nbytes)
                else:
                    self._sessions.move_to_end(session_id)

    def close(self, session_id: int, owner: str) -> bool:
        """Drop the session ``session_id`` of ``owner``; False if none."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or session.owner != owner:
                return False
            self._drop_locked(session)
            return True

    def expire(self) -> int:
        """Drop the sessions idle for longer than the idle timeout; their count."""
        cutoff = self._clock() - self.idle_timeout
        with self._lock:
            stale = []
            for session in self._sessions.values():
                if session.last_used > cutoff:
                    break  # least recently used first: the rest are fresher
                if session.users == 0:
                    stale.append(session)
            for session in stale:
                self._drop_locked(session)
        return len(stale)

    def _evict_one(self) -> bool:
        with self._lock:
            return self._evict_locked()

    def _evict_locked(self) -> bool:
        """Drop the least recently used idle session; False if all are in use."""
        for session in self._sessions.values():
            if session.users == 0:
                self._drop_locked(session)
                return True
        return False

    def _drop_locked(self, session: Session) -> None:
        del self._sessions[session.session_id]
        session.dropped = True
        if session.users == 0:
            self.release(session.nbytes)


class IdleWatch:
    """How long one stream has been waiting for its client.

    The clock stops while the server works on the stream (``working``):
    only the client's silence counts, not a slow policy.
    """

    def __init__(self, end: Callable[[], None], clock: Callable[[], float]) -> None:
        self._end = end
        self._clock = clock
        self._since = clock()
        self._busy = False
        #: Set once the watchdog has ended the stream.
        self.ended = False

    @contextmanager
    def working(self) -> Iterator[None]:
        """The server is busy with the stream in the ``with`` block."""
        self._busy = True
        try:
            yield
        finally:
            self._since = self._clock()
            self._busy = False

    def idle_for(self, now: float) -> float:
        """Seconds the stream has been waiting for its client, at ``now``."""
        return 0.0 if self._busy else now - self._since

    def end(self) -> None:
        """End the stream (once)."""
        if not self.ended:
            self.ended = True
            self._end()


class Watchdog:
    """One thread per server: ends idle streams, expires idle sessions.

    Checks every ``min(1, timeout / 4)`` seconds, so a stream idle for
    ``stream_idle_timeout`` is ended within a quarter of that (at most one
    second) more.
    """

    def __init__(
        self,
        table: SessionTable,
        stream_idle_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._table = table
        self._timeout = stream_idle_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._watches: Dict[int, IdleWatch] = {}
        self._stop = threading.Event()
        self.period = min(1.0, stream_idle_timeout / 4, table.idle_timeout / 4)
        self._thread = threading.Thread(
            target=self._run, name="mlbridge-grpc-watchdog", daemon=True
        )

    def start(self) -> None:
        """Start checking."""
        self._thread.start()

    def stop(self) -> None:
        """Stop checking (idempotent)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def watch(self, end: Callable[[], None]) -> IdleWatch:
        """Watch a new stream; ``end()`` ends it (called from the watchdog)."""
        watch = IdleWatch(end, self._clock)
        with self._lock:
            self._watches[id(watch)] = watch
        return watch

    def unwatch(self, watch: IdleWatch) -> None:
        """Stop watching a stream that ended."""
        with self._lock:
            self._watches.pop(id(watch), None)

    @property
    def streams(self) -> int:
        """Streams being watched (open now)."""
        with self._lock:
            return len(self._watches)

    def check(self) -> None:
        """One round: end the streams idle for too long, expire sessions."""
        now = self._clock()
        with self._lock:
            idle = [w for w in self._watches.values() if w.idle_for(now) > self._timeout]
        for watch in idle:
            watch.end()
        self._table.expire()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.check()


__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "DEFAULT_STREAM_IDLE_TIMEOUT",
    "DEFAULT_WORKERS",
    "IdleWatch",
    "RESERVED_WORKERS",
    "ServerLimits",
    "Session",
    "SessionTable",
    "UnknownSession",
    "Watchdog",
    "schema_footprint",
    "text_footprint",
]

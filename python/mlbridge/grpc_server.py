"""Serve a policy over gRPC (mlbridge.v1.ModelService) to many compilers.

The same policy callables as the pipe host (see :mod:`mlbridge.policy`).
Each compilation opens its own session (unary calls) or its own stream, so one
server handles many concurrent compilations with no cross-talk: every session
has its own input buffer, context and lock.

Addresses: ``unix:/path/to/socket`` (created mode 0600) or ``HOST:PORT``. TCP
binds loopback unless ``allow_remote=True`` is passed explicitly.

Clients are untrusted: what they can make the server hold (threads, sessions,
memory, time) is bounded by :class:`mlbridge.grpc_sessions.ServerLimits`, and
every failure ends the call with a status naming the problem (never UNKNOWN);
see docs/grpc.md, "Limits".
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import logging
import os
import socket
import stat
import threading
import time
import urllib.parse
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import grpc
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, MlbridgeError
from mlbridge.grpc_sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_STREAM_IDLE_TIMEOUT,
    DEFAULT_WORKERS,
    IdleWatch,
    ServerLimits,
    Session,
    SessionTable,
    UnknownSession,
    Watchdog,
    schema_footprint,
)
from mlbridge.limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_SESSION_MEMORY,
    BudgetError,
    MemoryBudget,
    check_schema,
)
from mlbridge.policy import Policy, as_decision_fn, output_arrays, scalar_packer
from mlbridge.tensor_spec import DTYPES, SpecError, TensorSpec, check_unique_names
from mlbridge.v1 import model_service_pb2 as pb
from mlbridge.v1 import model_service_pb2_grpc as pb_grpc

PROTOCOL_VERSION = 1
_TYPE_BY_PROTO = {i + 1: name for i, name in enumerate(DTYPES)}
_LOG = logging.getLogger(__name__)
#: Peer addresses gRPC reports for loopback connections (127.0.0.0/8).
_LOOPBACK_PREFIXES = ("127.", "::ffff:127.")


class AddressError(MlbridgeError):
    """An address the server refuses to bind (e.g. non-loopback by default)."""


class InvalidRequest(MlbridgeError):
    """A schema or request that breaks the protocol (INVALID_ARGUMENT)."""


def specs_from_proto(specs: Sequence[Any], what: str) -> List[TensorSpec]:
    """TensorSpecs from mlbridge.v1.TensorSpec messages; InvalidRequest on errors."""
    out: List[TensorSpec] = []
    for spec in specs:
        type_name = _TYPE_BY_PROTO.get(spec.dtype)
        if type_name is None:
            raise InvalidRequest(f"{what}: tensor '{spec.name}' has invalid dtype {spec.dtype}")
        try:
            out.append(TensorSpec(spec.name, type_name, tuple(spec.shape), spec.port))
        except SpecError as err:
            raise InvalidRequest(f"{what}: {err}") from None
    check_unique_names(out, what, InvalidRequest)
    return out


def client_identity(context: grpc.ServicerContext) -> str:
    """Who is calling, as far as the connection tells: the owner of the
    sessions the call opens.

    The TLS client certificate's identities when there are any; else the
    peer's IP address (without the port, so a reconnecting client keeps its
    sessions); every loopback address and every unix socket peer is "local"
    (gRPC does not expose a unix peer's uid or pid; a 0600 socket admits only
    the server's user and root).
    """
    identities = context.peer_identities()
    if identities:
        return "tls:" + ",".join(i.decode("utf-8", "replace") for i in identities)
    kind, _, rest = urllib.parse.unquote(context.peer()).partition(":")
    if kind not in ("ipv4", "ipv6"):
        return "local"
    host = rest.rpartition(":")[0].strip("[]")
    if host.startswith(_LOOPBACK_PREFIXES) or host == "::1":  # the usual case, fast
        return "local"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return f"host:{host}"
    mapped = getattr(ip, "ipv4_mapped", None)
    return "local" if (mapped or ip).is_loopback else f"host:{ip}"


#: How failures become statuses, first match wins (see docs/grpc.md).
_STATUS_OF: Tuple[Tuple[type, grpc.StatusCode], ...] = (
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
    (UnknownSession, grpc.StatusCode.NOT_FOUND),
    (BudgetError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (MemoryError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (CodecError, grpc.StatusCode.INVALID_ARGUMENT),
    (SpecError, grpc.StatusCode.INVALID_ARGUMENT),
)


def status_of(err: Exception, rpc: str) -> Tuple[grpc.StatusCode, str]:
    """The status code and message a call that raised ``err`` ends with.

    An error of no expected kind is a server bug: INTERNAL, logged (with its
    traceback at DEBUG level), never gRPC's UNKNOWN with a traceback.
    """
    for kind, code in _STATUS_OF:
        if isinstance(err, kind):
            return code, str(err) or f"{rpc}: the server is out of memory"
    _LOG.warning(
        "%s failed: %s: %s", rpc, type(err).__name__, err, exc_info=_LOG.isEnabledFor(logging.DEBUG)
    )
    return grpc.StatusCode.INTERNAL, f"{rpc}: internal error ({type(err).__name__})"


_Handler = TypeVar("_Handler", bound=Callable[..., Any])


def _with_status(method: _Handler) -> _Handler:
    """Make a unary handler end every failure with :func:`status_of`'s status."""

    @functools.wraps(method)
    def handler(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as err:  # every failure gets a status, never UNKNOWN
            code, details = status_of(err, method.__name__)
        context.abort(code, details)

    return handler  # type: ignore[return-value]


def end_call(context: grpc.ServicerContext, code: grpc.StatusCode, details: str) -> None:
    """End a call from another thread with ``code`` and ``details``.

    The public ``ServicerContext.cancel()`` ends a call as CANCELLED with no
    message; grpcio's underlying call can carry a status
    (``grpc_call_cancel_with_status``), used when the installed grpcio has it.
    Either way the handler blocked on the call wakes up (with grpc.RpcError).
    """
    call = getattr(getattr(context, "_rpc_event", None), "call", None)
    try:
        call.cancel(code.value[0], details)  # type: ignore[union-attr]
    except (AttributeError, TypeError):
        context.cancel()


class ModelServicer(pb_grpc.ModelServiceServicer):
    """Answers ModelService calls with a policy, within ``limits``.

    Call :meth:`close` when the server has stopped (ends the watchdog).
    """

    def __init__(
        self,
        policy: Policy,
        limits: ServerLimits = ServerLimits(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._decide = as_decision_fn(policy)
        self.limits = limits
        #: The memory all sessions' state may take (see docs/grpc.md, "Limits").
        self.budget = MemoryBudget(limits.session_memory)
        self._table = SessionTable(
            self.budget, limits.max_sessions, limits.session_idle_timeout, clock
        )
        self._streams = threading.BoundedSemaphore(limits.stream_limit)
        self._watchdog = Watchdog(self._table, limits.stream_idle_timeout, clock)
        self._watchdog.start()

    def close(self) -> None:
        """Stop the watchdog thread."""
        self._watchdog.stop()

    # -- sessions ----------------------------------------------------------

    def _new_session(self, request: Any) -> Session:
        """A session for an OpenSessionRequest, its memory reserved first."""
        if request.version != PROTOCOL_VERSION:
            raise InvalidRequest(
                f"client speaks mlbridge protocol version {request.version}, "
                f"this server speaks {PROTOCOL_VERSION}"
            )
        nbytes = schema_footprint(request.schema, self.budget.limit)
        self._table.reserve(nbytes, "the session's schema")
        try:
            inputs = specs_from_proto(request.schema.inputs, "schema inputs")
            outputs = specs_from_proto(request.schema.outputs, "schema outputs")
            if not outputs:
                raise InvalidRequest("schema declares no outputs")
            try:  # a request or reply larger than a message can never be valid
                size = check_schema(inputs, self.limits.max_message_bytes, "schema inputs")
                check_schema(outputs, self.limits.max_message_bytes, "schema outputs")
            except BudgetError as err:
                raise InvalidRequest(str(err)) from None
            self._table.reserve(size, "the session's input buffer")
            nbytes += size
            return Session(
                inputs,
                outputs,
                TensorBuffer(inputs),
                scalar_packer(outputs[0]) if len(outputs) == 1 else None,
                nbytes=nbytes,
            )
        except BaseException:
            self._table.release(nbytes)
            raise

    def _answer(self, session: Session, request: Any) -> Any:
        """One decision; an EvaluateReply (policy errors go in its error)."""
        if request.context and request.context != session.context:
            self._table.set_context(session, request.context)
        session.buffer.fill_parts(request.inputs, "request")
        try:
            value = self._decide(session.buffer.views, session.context)
            packed = session.pack(value) if session.pack is not None else None
            if packed is None:
                answer = output_arrays(session.outputs, value)
        except Exception as err:  # the policy failed: report, keep the session
            return pb.EvaluateReply(error=f"{type(err).__name__}: {err}")
        session.decisions += 1
        if packed is not None:
            return pb.EvaluateReply(outputs=[packed])
        return pb.EvaluateReply(outputs=[answer[s.name].tobytes() for s in session.outputs])

    # -- RPCs ----------------------------------------------------------------

    @_with_status
    def OpenSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        owner = client_identity(context)
        session_id = self._table.add(self._new_session(request), owner)
        return pb.OpenSessionReply(session_id=session_id, version=PROTOCOL_VERSION)

    @_with_status
    def Evaluate(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self._table.use(request.session_id, client_identity(context)) as session:
            with session.lock:
                return self._answer(session, request)

    def EvaluateStream(
        self, request_iterator: Iterator[Any], context: grpc.ServicerContext
    ) -> Iterator[Any]:
        if not self._streams.acquire(blocking=False):
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.limits.stream_limit} streams are open, the server's limit "
                f"(max_streams): retry later or use unary calls",
            )
        timeout = self.limits.stream_idle_timeout
        watch = self._watchdog.watch(
            functools.partial(
                end_call,
                context,
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"stream idle for more than {timeout:g} s (the server's stream_idle_timeout): "
                f"ended by the server",
            )
        )
        status = None
        try:
            yield from self._serve_stream(request_iterator, watch)
        except grpc.RpcError:
            pass  # the client went away, or the watchdog ended the stream
        except Exception as err:  # every failure gets a status, never UNKNOWN
            status = status_of(err, "EvaluateStream")
        finally:
            self._watchdog.unwatch(watch)
            self._streams.release()
        if status is not None:
            context.abort(*status)

    def _serve_stream(self, requests: Iterator[Any], watch: IdleWatch) -> Iterator[Any]:
        """The replies of one stream; its session's memory is held until it ends."""
        first = next(requests, None)
        if first is None:
            return
        with watch.working():
            if first.WhichOneof("kind") != "open":
                raise InvalidRequest("the first message of a stream must open the session")
            session = self._new_session(first.open)
        try:
            for message in requests:
                with watch.working():
                    if message.WhichOneof("kind") != "evaluate":
                        raise InvalidRequest("only evaluate messages may follow the first one")
                    reply = self._answer(session, message.evaluate)
                yield reply
        finally:
            self._table.release(session.nbytes)

    @_with_status
    def CloseSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._table.close(request.session_id, client_identity(context))
        return pb.CloseSessionReply()

    @property
    def open_sessions(self) -> int:
        """Number of sessions opened with OpenSession and not closed or expired."""
        return len(self._table)

    @property
    def open_streams(self) -> int:
        """Number of streams being served now."""
        return self._watchdog.streams


def check_address(address: str, allow_remote: bool = False) -> str:
    """Validate ``address`` ("unix:/path" or "host:port"); loopback unless
    ``allow_remote``. Returns the address to bind."""
    if address.startswith("unix:"):
        if not address[len("unix:") :]:
            raise AddressError("unix address needs a path: unix:/path/to/socket")
        return address
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise AddressError(f"address '{address}' is neither unix:PATH nor HOST:PORT")
    host = host.strip("[]")
    if not allow_remote:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise AddressError(
                f"refusing to bind '{address}': not a loopback address "
                f"(pass allow_remote / --allow-remote to serve other "
                f"machines)"
            )
    return address


def check_bindable(address: str) -> None:
    """Refuse, with the reason, an address that cannot be bound or must not be.

    A unix socket needs an existing directory; an existing file at its path
    must be a socket no server is listening on (gRPC would replace it). A TCP
    port must be free. Checked before gRPC tries, whose own failure says less.
    """
    if address.startswith("unix:"):
        path = address[len("unix://") :] if address.startswith("unix://") else address[5:]
        parent = os.path.dirname(path) or "."
        if not os.path.isdir(parent):
            raise AddressError(f"cannot bind '{address}': directory '{parent}' does not exist")
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(mode):
            raise AddressError(
                f"cannot bind '{address}': '{path}' exists and is not a "
                f"socket (remove it or choose another path)"
            )
        with socket.socket(socket.AF_UNIX) as probe:
            probe.settimeout(1.0)
            try:
                probe.connect(path)
            except OSError:
                return  # a stale socket: gRPC replaces it
        raise AddressError(f"cannot bind '{address}': a server is already listening there")
    host, _, port = address.rpartition(":")
    if int(port) == 0:
        return
    try:
        candidates = socket.getaddrinfo(
            host.strip("[]"), int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as err:
        raise AddressError(f"cannot bind '{address}': {err.strerror}") from None
    failure: Optional[OSError] = None
    for family, kind, proto, _, where in candidates:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(where)
                return
            except OSError as err:
                failure = err
    reason = (failure.strerror or str(failure)) if failure is not None else "no address"
    if failure is not None and failure.errno == errno.EADDRINUSE:
        reason += " (another server uses the port)"
    raise AddressError(f"cannot bind '{address}': {reason}")


def start_server(
    policy: Policy,
    address: str,
    *,
    allow_remote: bool = False,
    max_message_bytes: int = DEFAULT_MAX_BYTES,
    workers: int = DEFAULT_WORKERS,
    max_streams: Optional[int] = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_memory: int = DEFAULT_SESSION_MEMORY,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
    stream_idle_timeout: float = DEFAULT_STREAM_IDLE_TIMEOUT,
    credentials: Optional[grpc.ServerCredentials] = None,
) -> "RunningServer":
    """Start serving ``policy`` at ``address``; returns the running server.

    The limits are :class:`mlbridge.grpc_sessions.ServerLimits`' (ValueError
    for impossible ones); AddressError when the address cannot be bound.
    """
    address = check_address(address, allow_remote)
    limits = ServerLimits(
        workers=workers,
        max_streams=max_streams,
        max_sessions=max_sessions,
        session_memory=session_memory,
        session_idle_timeout=session_idle_timeout,
        stream_idle_timeout=stream_idle_timeout,
        max_message_bytes=max_message_bytes,
    )
    check_bindable(address)
    options = [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.so_reuseport", 0),
    ]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers), options=options)
    old_umask = os.umask(0o177) if address.startswith("unix:") else None
    try:
        port = (
            server.add_secure_port(address, credentials)
            if credentials is not None
            else server.add_insecure_port(address)
        )
    except RuntimeError:  # recent grpcio raises instead of returning 0
        port = 0
    finally:
        if old_umask is not None:
            os.umask(old_umask)
    if port == 0:
        raise AddressError(f"cannot bind '{address}'")
    servicer = ModelServicer(policy, limits)
    pb_grpc.add_ModelServiceServicer_to_server(servicer, server)
    server.start()
    return RunningServer(server, servicer, address, port)


@dataclass
class RunningServer:
    """A started server: its address (with the real port) and servicer."""

    server: grpc.Server
    servicer: ModelServicer
    address: str
    port: int

    @property
    def target(self) -> str:
        """What a client dials (the bound TCP port filled in)."""
        if self.address.startswith("unix:"):
            return self.address
        host = self.address.rpartition(":")[0]
        return f"{host}:{self.port}"

    def stop(self, grace: Optional[float] = 1.0) -> None:
        """Stop serving (in-flight calls get ``grace`` seconds)."""
        self.server.stop(grace).wait()
        self.servicer.close()

    def wait(self) -> None:
        """Block until the server stops."""
        self.server.wait_for_termination()
        self.servicer.close()


def free_loopback_port() -> int:
    """An unused TCP port on 127.0.0.1 (for tests and examples)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = [
    "AddressError",
    "InvalidRequest",
    "ModelServicer",
    "RunningServer",
    "check_address",
    "check_bindable",
    "client_identity",
    "end_call",
    "free_loopback_port",
    "specs_from_proto",
    "start_server",
    "status_of",
]

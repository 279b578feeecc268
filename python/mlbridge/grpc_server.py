"""Serve a policy over gRPC (mlbridge.v1.ModelService) to many compilers.

The same policy callables as the pipe host (see :mod:`mlbridge.pipe_host`).
Each compilation opens its own session (unary calls) or its own stream, so one
server handles many concurrent compilations with no cross-talk: every session
has its own input buffer, context and lock.

Addresses: ``unix:/path/to/socket`` (created mode 0600) or ``HOST:PORT``. TCP
binds loopback unless ``allow_remote=True`` is passed explicitly.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import socket
import threading
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import grpc

from mlbridge.codecs._validate import DEFAULT_MAX_BYTES
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, MlbridgeError
from mlbridge.pipe_host import Policy, as_decision_fn, output_arrays, scalar_packer
from mlbridge.tensor_spec import DTYPES, SpecError, TensorSpec
from mlbridge.v1 import model_service_pb2 as pb
from mlbridge.v1 import model_service_pb2_grpc as pb_grpc

PROTOCOL_VERSION = 1
_TYPE_BY_PROTO = {i + 1: name for i, name in enumerate(DTYPES)}


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
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise InvalidRequest(f"{what}: a tensor name appears twice")
    return out


@dataclass
class _Session:
    """The state of one compilation."""

    inputs: List[TensorSpec]
    outputs: List[TensorSpec]
    buffer: TensorBuffer
    #: Packs a scalar answer straight to bytes (single scalar output only).
    pack: Optional[Callable[[Any], Optional[bytes]]] = None
    context: str = ""
    decisions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class ModelServicer(pb_grpc.ModelServiceServicer):
    """Answers ModelService calls with a policy."""

    def __init__(self, policy: Policy, max_sessions: int = 4096) -> None:
        self._decide = as_decision_fn(policy)
        self._sessions: Dict[int, _Session] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._max_sessions = max_sessions

    # -- sessions ----------------------------------------------------------

    def _new_session(self, request: Any) -> _Session:
        if request.version != PROTOCOL_VERSION:
            raise InvalidRequest(f"client speaks mlbridge protocol version {request.version}, "
                           f"this server speaks {PROTOCOL_VERSION}")
        inputs = specs_from_proto(request.schema.inputs, "schema inputs")
        outputs = specs_from_proto(request.schema.outputs, "schema outputs")
        if not outputs:
            raise InvalidRequest("schema declares no outputs")
        return _Session(inputs, outputs, TensorBuffer(inputs),
                        scalar_packer(outputs[0]) if len(outputs) == 1 else None)

    def _answer(self, session: _Session, request: Any) -> Any:
        """One decision; an EvaluateReply (policy errors go in its error)."""
        if request.context:
            session.context = request.context
        try:
            session.buffer.fill_parts(request.inputs, "request")
        except CodecError as err:
            raise InvalidRequest(str(err)) from None
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

    def OpenSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            session = self._new_session(request)
        except InvalidRequest as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        with self._lock:
            if len(self._sessions) >= self._max_sessions:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"more than {self._max_sessions} open sessions")
            session_id = next(self._ids)
            self._sessions[session_id] = session
        return pb.OpenSessionReply(session_id=session_id, version=PROTOCOL_VERSION)

    def Evaluate(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            session = self._sessions.get(request.session_id)
        if session is None:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"no open session {request.session_id}")
        with session.lock:
            try:
                return self._answer(session, request)
            except InvalidRequest as err:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))

    def EvaluateStream(self, request_iterator: Iterator[Any],
                       context: grpc.ServicerContext) -> Iterator[Any]:
        first = next(request_iterator, None)
        if first is None:
            return
        if first.WhichOneof("kind") != "open":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "the first message of a stream must open the session")
        try:
            session = self._new_session(first.open)
        except InvalidRequest as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        for message in request_iterator:
            if message.WhichOneof("kind") != "evaluate":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              "only evaluate messages may follow the first one")
            try:
                yield self._answer(session, message.evaluate)
            except InvalidRequest as err:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))

    def CloseSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            self._sessions.pop(request.session_id, None)
        return pb.CloseSessionReply()

    @property
    def open_sessions(self) -> int:
        """Number of sessions opened with OpenSession and not closed."""
        with self._lock:
            return len(self._sessions)


def check_address(address: str, allow_remote: bool = False) -> str:
    """Validate ``address`` ("unix:/path" or "host:port"); loopback unless
    ``allow_remote``. Returns the address to bind."""
    if address.startswith("unix:"):
        if not address[len("unix:"):]:
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
            raise AddressError(f"refusing to bind '{address}': not a loopback address "
                               f"(pass allow_remote / --allow-remote to serve other "
                               f"machines)")
    return address


def start_server(policy: Policy, address: str, *, allow_remote: bool = False,
                 max_message_bytes: int = DEFAULT_MAX_BYTES, workers: int = 16,
                 credentials: Optional[grpc.ServerCredentials] = None
                 ) -> "RunningServer":
    """Start serving ``policy`` at ``address``; returns the running server."""
    address = check_address(address, allow_remote)
    servicer = ModelServicer(policy)
    options = [("grpc.max_receive_message_length", max_message_bytes),
               ("grpc.max_send_message_length", max_message_bytes),
               ("grpc.so_reuseport", 0)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers), options=options)
    pb_grpc.add_ModelServiceServicer_to_server(servicer, server)
    old_umask = os.umask(0o177) if address.startswith("unix:") else None
    try:
        port = (server.add_secure_port(address, credentials) if credentials is not None
                else server.add_insecure_port(address))
    finally:
        if old_umask is not None:
            os.umask(old_umask)
    if port == 0:
        raise AddressError(f"cannot bind '{address}'")
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

    def wait(self) -> None:
        """Block until the server stops."""
        self.server.wait_for_termination()


def free_loopback_port() -> int:
    """An unused TCP port on 127.0.0.1 (for tests and examples)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = ["AddressError", "InvalidRequest", "ModelServicer", "RunningServer", "check_address",
           "free_loopback_port", "specs_from_proto", "start_server"]

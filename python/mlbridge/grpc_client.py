"""A client of mlbridge.v1.ModelService: what a compiler does, in Python.

Used by tests and tools (and by Python-driven compilers). Every call has a
deadline; the schema is sent once when the session opens.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence

import numpy as np

import grpc
from mlbridge.codecs.schema import DEFAULT_MAX_BYTES, arrays_for
from mlbridge.errors import MlbridgeError, ModelError
from mlbridge.tensor_spec import TensorSpec
from mlbridge.v1 import model_service_pb2 as pb
from mlbridge.v1 import model_service_pb2_grpc as pb_grpc
from mlbridge.v1 import tensor_pb2

PROTOCOL_VERSION = 1


def schema_message(inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]) -> Any:
    """The mlbridge.v1.Schema of a session."""

    def spec(s: TensorSpec) -> Any:
        return tensor_pb2.TensorSpec(name=s.name, dtype=s.proto_dtype, shape=s.shape, port=s.port)

    return tensor_pb2.Schema(inputs=[spec(s) for s in inputs], outputs=[spec(s) for s in outputs])


class _StreamDeadline:
    """Cancels a streaming call whose next reply takes longer than ``seconds``.

    A stream has no per-message deadline in gRPC, so one thread per streaming
    session watches the wait that is in progress (armed before each read,
    disarmed after it) and cancels the call when it overruns.
    """

    def __init__(self, call: Any, seconds: float) -> None:
        self._call, self._seconds = call, seconds
        self._cond = threading.Condition()
        self._until: Optional[float] = None
        self._stopped = False
        self.expired = False
        self._thread = threading.Thread(
            target=self._watch, name="mlbridge-stream-deadline", daemon=True
        )
        self._thread.start()

    def arm(self) -> None:
        with self._cond:
            self._until = time.monotonic() + self._seconds
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._until = None

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join()

    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._until is None:
                    self._cond.wait()
                    continue
                left = self._until - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self.expired, self._until = True, None
                self._call.cancel()


class ModelClient:
    """One session with a model server, unary or streaming.

    ``evaluate(features)`` sends the inputs (name -> array) and returns the
    outputs (name -> array); a policy failure raises ModelError, a transport
    failure grpc.RpcError (with its status code).
    """

    def __init__(
        self,
        target: str,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        *,
        streaming: bool = False,
        deadline: float = 10.0,
        max_message_bytes: int = DEFAULT_MAX_BYTES,
        credentials: Optional[grpc.ChannelCredentials] = None,
    ) -> None:
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.deadline = deadline
        options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ]
        self._channel = (
            grpc.secure_channel(target, credentials, options)
            if credentials is not None
            else grpc.insecure_channel(target, options)
        )
        self._stub = pb_grpc.ModelServiceStub(self._channel)
        self._observation = 0
        self._open = pb.OpenSessionRequest(
            version=PROTOCOL_VERSION, schema=schema_message(self.inputs, self.outputs)
        )
        self._session_id = 0
        self._requests: Optional["queue.Queue[Any]"] = None
        self._replies: Optional[Iterator[Any]] = None
        self._watchdog: Optional[_StreamDeadline] = None
        if streaming:
            self._requests = queue.Queue()
            self._requests.put(pb.StreamRequest(open=self._open))
            self._replies = self._stub.EvaluateStream(iter(self._requests.get, None))
            self._watchdog = _StreamDeadline(self._replies, deadline)
        else:
            reply = self._stub.OpenSession(self._open, timeout=deadline)
            self._session_id = reply.session_id

    def evaluate(self, features: Mapping[str, Any], context: str = "") -> Dict[str, np.ndarray]:
        """One decision."""
        arrays = arrays_for(self.inputs, features, "request")
        request = pb.EvaluateRequest(
            session_id=self._session_id,
            observation=self._observation,
            inputs=[a.tobytes() for a in arrays],
            context=context,
        )
        self._observation += 1
        if self._requests is not None:
            self._requests.put(pb.StreamRequest(evaluate=request))
            reply = self._next_streamed()
        else:
            reply = self._stub.Evaluate(request, timeout=self.deadline)
        if reply.error:
            raise ModelError(reply.error)
        if len(reply.outputs) != len(self.outputs):
            raise MlbridgeError(
                f"reply carries {len(reply.outputs)} outputs, expected {len(self.outputs)}"
            )
        out = {}
        for spec, data in zip(self.outputs, reply.outputs):
            if len(data) != spec.nbytes:
                raise MlbridgeError(
                    f"output '{spec.name}' has {len(data)} bytes, expected {spec.nbytes}"
                )
            out[spec.name] = np.frombuffer(data, spec.dtype).reshape(spec.shape).copy()
        return out

    def _next_streamed(self) -> Any:
        """The next reply of the stream, within the deadline."""
        if self._replies is None or self._watchdog is None:
            raise MlbridgeError("the streaming session is closed")
        self._watchdog.arm()
        try:
            return next(self._replies)
        except grpc.RpcError as e:
            if self._watchdog.expired:
                raise MlbridgeError(f"no reply from the server within {self.deadline} s") from e
            raise
        except StopIteration as e:
            raise MlbridgeError("the server ended the stream") from e
        finally:
            self._watchdog.disarm()

    def close(self) -> None:
        """End the session and the channel.

        The stream is cancelled and every reference to it dropped here, in the
        caller's thread: a call object left for interpreter shutdown to
        collect can deadlock there (seen with grpcio 1.85 on Python 3.13).
        """
        if self._requests is not None:
            self._requests.put(None)  # ends the request stream: the server closes
            if self._replies is not None and self._watchdog is not None:
                self._watchdog.arm()
                try:
                    for _ in self._replies:
                        pass
                except grpc.RpcError:
                    pass
                self._watchdog.stop()
                self._replies.cancel()  # type: ignore[attr-defined]
            self._replies = self._watchdog = self._requests = None
        elif self._session_id:
            try:
                self._stub.CloseSession(
                    pb.CloseSessionRequest(session_id=self._session_id), timeout=self.deadline
                )
            except grpc.RpcError:
                pass
            self._session_id = 0
        self._channel.close()

    def __enter__(self) -> "ModelClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

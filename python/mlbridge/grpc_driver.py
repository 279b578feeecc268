"""Drive a compiler that serves mlbridge.v1.CompilerService (compiler as server).

The compiler (a C++ GrpcServerModelRunner) listens; the driver connects, says
hello, receives the schema, then answers every observation with the policy's
decision until the compiler ends the session. The same policy callables as
the pipe host and the gRPC server.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass
from typing import Any, Optional

import grpc
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, MlbridgeError
from mlbridge.grpc_server import InvalidRequest, specs_from_proto
from mlbridge.policy import Policy, as_decision_fn, output_arrays
from mlbridge.v1 import model_service_pb2 as pb
from mlbridge.v1 import model_service_pb2_grpc as pb_grpc

PROTOCOL_VERSION = 1


class DriverError(MlbridgeError):
    """The compiler broke the protocol."""


@dataclass
class DriveStats:
    """What one driven session did."""

    decisions: int = 0
    errors_reported: int = 0
    seconds: float = 0.0


def drive(
    target: str,
    policy: Policy,
    *,
    connect_timeout: float = 30.0,
    credentials: Optional[grpc.ChannelCredentials] = None,
) -> DriveStats:
    """Connect to the compiler at ``target`` and make its decisions until it
    ends the session. Raises grpc.RpcError on transport failures."""
    decide = as_decision_fn(policy)
    channel = (
        grpc.secure_channel(target, credentials)
        if credentials is not None
        else grpc.insecure_channel(target)
    )
    stats, start = DriveStats(), time.monotonic()
    outgoing: "queue.Queue[Any]" = queue.Queue()
    outgoing.put(pb.DriverMessage(hello=PROTOCOL_VERSION))
    try:
        grpc.channel_ready_future(channel).result(timeout=connect_timeout)
        stub = pb_grpc.CompilerServiceStub(channel)
        replies = stub.Drive(iter(outgoing.get, None))
        buffer = outputs = None
        context = ""
        for message in replies:
            kind = message.WhichOneof("kind")
            if kind == "open":
                try:
                    inputs = specs_from_proto(message.open.schema.inputs, "schema inputs")
                    outputs = specs_from_proto(message.open.schema.outputs, "schema outputs")
                except InvalidRequest as err:
                    raise DriverError(str(err)) from None
                buffer = TensorBuffer(inputs)
                continue
            if kind != "observation" or buffer is None or outputs is None:
                raise DriverError(f"unexpected {kind} message from the compiler")
            request = message.observation
            if request.context:
                context = request.context
            try:
                buffer.fill_parts(request.inputs, "observation")
            except CodecError as err:
                raise DriverError(str(err)) from None
            try:
                answer = output_arrays(outputs, decide(buffer.views, context))
                reply = pb.EvaluateReply(outputs=[answer[s.name].tobytes() for s in outputs])
                stats.decisions += 1
            except Exception as err:  # the policy failed: tell the compiler
                reply = pb.EvaluateReply(error=f"{type(err).__name__}: {err}")
                stats.errors_reported += 1
            outgoing.put(pb.DriverMessage(decision=reply))
    finally:
        outgoing.put(None)
        channel.close()
        stats.seconds = time.monotonic() - start
    return stats

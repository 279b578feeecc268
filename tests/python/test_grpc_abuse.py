"""Untrusted clients against the gRPC model server (issue 11).

Memory amplification, starvation by quiet streams and abandoned sessions,
statuses for bad input (never UNKNOWN) and `mlbridge serve --grpc` bind
failures. Every call has a deadline; servers listen on unix sockets or
loopback only; timeouts are short (0.5 s) so the tests run fast.
"""

from __future__ import annotations

import queue
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np
import pytest
import test_grpc_server as shared

import grpc
from mlbridge.grpc_client import ModelClient, schema_message
from mlbridge.grpc_server import RunningServer, client_identity, start_server
from mlbridge.grpc_sessions import Session, SessionTable, UnknownSession
from mlbridge.limits import MemoryBudget
from mlbridge.tensor_spec import TensorSpec
from mlbridge.v1 import model_service_pb2 as pb
from mlbridge.v1 import model_service_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
INPUTS, OUTPUTS, echo = shared.INPUTS, shared.OUTPUTS, shared.echo
#: The transport-parametrised server of test_grpc_server.py (default limits).
server = shared.server

DEADLINE = 5.0
QUICK = 0.5


@pytest.fixture
def serve(tmp_path) -> Iterator[Callable[..., RunningServer]]:
    """``serve(policy=echo, **limits)``: a server on a fresh unix socket."""
    started: List[RunningServer] = []

    def start(policy: Any = echo, **limits: Any) -> RunningServer:
        running = start_server(policy, f"unix:{tmp_path}/s{len(started)}.sock", **limits)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop(0)


@pytest.fixture
def channel() -> Iterator[Callable[[str], grpc.Channel]]:
    """``channel(target)``: a channel closed after the test."""
    opened: List[grpc.Channel] = []

    def make(target: str) -> grpc.Channel:
        opened.append(grpc.insecure_channel(target))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


@pytest.fixture
def make_stub(channel) -> Callable[[str], Any]:
    """``make_stub(target)``: a ModelService stub on a channel closed after the test."""
    return lambda target: pb_grpc.ModelServiceStub(channel(target))


def _open_request(inputs: List[TensorSpec], outputs: Optional[List[TensorSpec]] = None) -> Any:
    """Open a session of ``inputs``; by default echo's outputs ('<input>_out')."""
    if outputs is None:
        outputs = [TensorSpec(s.name + "_out", s.type_name, s.shape) for s in inputs]
    return pb.OpenSessionRequest(version=1, schema=schema_message(inputs, outputs))


def _raw_open(shape: List[int], type_name: str = "float") -> Any:
    """An OpenSessionRequest with one input of any shape (TensorSpec would refuse)."""
    request = _open_request([TensorSpec("x", "float", (1,))])
    del request.schema.inputs[:]
    request.schema.inputs.add(
        name="huge", dtype=TensorSpec("t", type_name).proto_dtype, shape=shape
    )
    return request


def _code(call: Callable[[], Any]) -> Tuple[grpc.StatusCode, str]:
    """The status code and details ``call`` fails with."""
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


class Stream:
    """One EvaluateStream call driven by hand, with a deadline on the call."""

    def __init__(self, target: str, deadline: float = DEADLINE) -> None:
        self._channel = grpc.insecure_channel(target)
        self._requests: "queue.Queue[Any]" = queue.Queue()
        self.replies = pb_grpc.ModelServiceStub(self._channel).EvaluateStream(
            iter(self._requests.get, None), timeout=deadline
        )

    def send(self, message: Any) -> None:
        """Queue one StreamRequest."""
        self._requests.put(message)

    def open(self, inputs: List[TensorSpec]) -> Any:
        """Open a session of ``inputs`` and make one decision; its reply."""
        self.send(pb.StreamRequest(open=_open_request(inputs)))
        self.send(
            pb.StreamRequest(evaluate=pb.EvaluateRequest(inputs=[bytes(s.nbytes) for s in inputs]))
        )
        return next(self.replies)

    def close(self) -> None:
        """End the call and its channel (idempotent)."""
        self._requests.put(None)
        self.replies.cancel()
        self._channel.close()


def _wait_until(condition: Callable[[], bool], limit: float = DEADLINE) -> bool:
    """Poll ``condition`` until it holds (True) or ``limit`` seconds pass (False)."""
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


# -- 1. memory amplification ----------------------------------------------------


def test_tensor_larger_than_a_message_is_refused_before_allocating(serve, make_stub):
    running = serve(max_message_bytes=1 << 20)
    stub = make_stub(running.target)
    # 8 MiB can never arrive in a 1 MiB message: refused, nothing reserved.
    code, details = _code(
        lambda: stub.OpenSession(_raw_open([1 << 20], "uint64_t"), timeout=DEADLINE)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "'huge'" in details and "message limit" in details
    # Each tensor fits, their sum does not.
    two = [TensorSpec("a", "uint8_t", (600_000,)), TensorSpec("b", "uint8_t", (600_000,))]
    code, details = _code(lambda: stub.OpenSession(_open_request(two), timeout=DEADLINE))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "2 tensors" in details
    # So are outputs: their reply could never be sent.
    code, details = _code(
        lambda: stub.OpenSession(
            _open_request([], [TensorSpec("big_out", "uint8_t", (2 << 20,))]), timeout=DEADLINE
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "'big_out'" in details
    assert running.servicer.budget.used == 0


def test_session_memory_budget_bounds_all_sessions_and_streams(serve, make_stub):
    one_mib = [TensorSpec("x", "uint8_t", (1 << 20,))]
    running = serve(max_message_bytes=2 << 20, session_memory=(2 << 20) + (256 << 10), workers=8)
    stub = make_stub(running.target)
    streams = [Stream(running.target) for _ in range(4)]
    try:
        assert streams[0].open(one_mib).outputs  # 1 MiB + its objects
        assert streams[1].open(one_mib).outputs
        code, details = _code(lambda: streams[2].open(one_mib))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "budget" in details
        # Unary sessions too; streams are never evicted to make room.
        code, _ = _code(lambda: stub.OpenSession(_open_request(one_mib), timeout=DEADLINE))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        streams[0].close()  # its memory comes back when the stream ends
        assert _wait_until(lambda: running.servicer.budget.used < 2 << 20)
        idle = stub.OpenSession(_open_request(one_mib), timeout=DEADLINE).session_id
        # The budget is full again: the stalest idle unary session makes room.
        assert streams[3].open(one_mib).outputs
        code, _ = _code(
            lambda: stub.Evaluate(
                pb.EvaluateRequest(session_id=idle, inputs=[bytes(1 << 20)]), timeout=DEADLINE
            )
        )
        assert code == grpc.StatusCode.NOT_FOUND
    finally:
        for stream in streams:
            stream.close()
    assert _wait_until(lambda: running.servicer.budget.used == 0)


def test_context_is_charged_to_the_budget(serve):
    running = serve(session_memory=256 << 10)
    with ModelClient(
        running.target,
        [TensorSpec("x", "int64_t")],
        [TensorSpec("x_out", "int64_t")],
        deadline=DEADLINE,
    ) as client:
        with pytest.raises(grpc.RpcError) as info:
            client.evaluate({"x": 1}, context="f" * (1 << 20))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert client.evaluate({"x": 2}, context="main")["x_out"] == 2
        used = running.servicer.budget.used
    assert running.servicer.budget.used == 0 < used


# -- 2. starvation ------------------------------------------------------------------


def test_quiet_stream_is_ended_and_frees_its_thread(serve):
    running = serve(workers=2, stream_idle_timeout=QUICK)  # one stream at a time
    stream = Stream(running.target, deadline=DEADLINE)
    try:
        assert stream.open([TensorSpec("x", "int64_t")]).outputs
        code, details = _code(lambda: next(stream.replies))  # then silence
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "idle" in details and "stream_idle_timeout" in details
    finally:
        stream.close()
    assert _wait_until(lambda: running.servicer.open_streams == 0)
    assert running.servicer.budget.used == 0
    again = Stream(running.target)  # the slot and the thread are free again
    try:
        assert again.open([TensorSpec("x", "int64_t")]).outputs
    finally:
        again.close()


@pytest.mark.slow
def test_slow_policy_is_not_an_idle_stream(serve):
    def slow(features: Any) -> int:
        time.sleep(3 * QUICK)
        return 7

    running = serve(slow, workers=2, stream_idle_timeout=QUICK)
    stream = Stream(running.target)
    try:
        reply = stream.open([TensorSpec("x", "int64_t")])
        assert not reply.error and np.frombuffer(reply.outputs[0], "<i8")[0] == 7
    finally:
        stream.close()


def test_excess_streams_are_refused_at_once_and_unary_calls_still_run(serve):
    running = serve(workers=6)  # default max_streams: workers - 4 = 2
    # A call starts when its Stream is made: each is made once the ones
    # before it hold their places, so the third is the one refused.
    streams: List[Stream] = []
    try:
        for _ in range(2):
            streams.append(Stream(running.target))
            assert streams[-1].open([TensorSpec("x", "int64_t")]).outputs
        streams.append(Stream(running.target))
        code, details = _code(lambda: streams[2].open([TensorSpec("x", "int64_t")]))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "max_streams" in details
        with ModelClient(running.target, INPUTS, OUTPUTS, deadline=DEADLINE) as client:
            values = shared._values(3)
            assert client.evaluate(values)["t_float_out"].tobytes() == values["t_float"].tobytes()
    finally:
        for stream in streams:
            stream.close()


def test_idle_unary_sessions_expire(serve, make_stub):
    running = serve(session_idle_timeout=QUICK)
    stub = make_stub(running.target)
    inputs = [TensorSpec("x", "int64_t")]
    session_id = stub.OpenSession(_open_request(inputs), timeout=DEADLINE).session_id
    assert running.servicer.budget.used > 0
    assert _wait_until(lambda: running.servicer.open_sessions == 0)
    assert running.servicer.budget.used == 0
    code, _ = _code(
        lambda: stub.Evaluate(
            pb.EvaluateRequest(session_id=session_id, inputs=[bytes(8)]), timeout=DEADLINE
        )
    )
    assert code == grpc.StatusCode.NOT_FOUND


def test_full_table_evicts_the_stalest_idle_session(serve, make_stub):
    running = serve(max_sessions=3)
    stub = make_stub(running.target)
    request = _open_request([TensorSpec("x", "int64_t")])
    ids = [stub.OpenSession(request, timeout=DEADLINE).session_id for _ in range(3)]
    stub.Evaluate(pb.EvaluateRequest(session_id=ids[0], inputs=[bytes(8)]), timeout=DEADLINE)
    ids.append(stub.OpenSession(request, timeout=DEADLINE).session_id)  # evicts ids[1]
    assert running.servicer.open_sessions == 3
    for session_id, alive in zip(ids, [True, False, True, True]):

        def evaluate(session_id: int = session_id) -> pb.EvaluateReply:
            return stub.Evaluate(
                pb.EvaluateRequest(session_id=session_id, inputs=[bytes(8)]), timeout=DEADLINE
            )

        if alive:
            assert evaluate().outputs
        else:
            assert _code(evaluate)[0] == grpc.StatusCode.NOT_FOUND


def test_session_ids_are_random_and_bound_to_their_client():
    table = SessionTable(MemoryBudget(1 << 20), max_sessions=100, idle_timeout=60)
    ids = [table.add(Session([], [], None), "tls:alice") for _ in range(50)]  # type: ignore
    assert 0 not in ids and len(set(ids)) == 50 and max(ids) > 1 << 40
    with pytest.raises(UnknownSession, match="no open session"):
        with table.use(ids[0], "tls:mallory"):
            pass
    assert not table.close(ids[0], "tls:mallory") and len(table) == 50
    with table.use(ids[0], "tls:alice") as session:
        assert session.session_id == ids[0]


class _Peer:
    """What client_identity reads of a ServicerContext."""

    def __init__(self, peer: str, identities: Optional[List[bytes]] = None) -> None:
        self._peer, self._identities = peer, identities

    def peer(self) -> str:
        return self._peer

    def peer_identities(self) -> Optional[List[bytes]]:
        return self._identities


@pytest.mark.parametrize(
    "peer,identities,owner",
    [
        ("unix:", None, "local"),
        ("ipv4:127.0.0.1:40000", None, "local"),
        ("ipv6:%5B::1%5D:40000", None, "local"),
        ("ipv6:%5B::ffff:127.0.0.1%5D:40000", None, "local"),
        ("ipv4:10.1.2.3:40000", None, "host:10.1.2.3"),
        ("ipv4:10.1.2.3:40001", None, "host:10.1.2.3"),
        ("ipv4:10.1.2.3:40000", [b"compiler-7"], "tls:compiler-7"),
    ],
)
def test_client_identity(peer, identities, owner):
    assert client_identity(_Peer(peer, identities)) == owner


def test_real_unix_and_loopback_clients_keep_their_sessions(server):
    with ModelClient(server.target, INPUTS, OUTPUTS, deadline=DEADLINE) as client:
        values = shared._values(4)
        assert client.evaluate(values)["t_int8_t_out"].tobytes() == values["t_int8_t"].tobytes()


# -- 3. statuses for bad input ----------------------------------------------------


@pytest.mark.parametrize(
    "shape,type_name,words",
    [
        ([10**12], "float", ["'huge'", "message limit"]),
        ([1 << 28], "uint64_t", ["'huge'", "message limit"]),
        ([1] * 100_000, "float", ["'huge'"]),
        ([1 << 62], "int8_t", ["'huge'"]),
        ([-1], "int8_t", ["'huge'"]),
    ],
)
@pytest.mark.parametrize("streaming", [False, True])
def test_absurd_shapes_are_invalid_argument(server, make_stub, shape, type_name, words, streaming):
    request = _raw_open(shape, type_name)
    if streaming:
        stream = Stream(server.target)
        stream.send(pb.StreamRequest(open=request))
        code, details = _code(lambda: next(stream.replies))
        stream.close()
    else:
        code, details = _code(
            lambda: make_stub(server.target).OpenSession(request, timeout=DEADLINE)
        )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert all(word in details for word in words), details
    assert server.servicer.budget.used == 0


def test_bad_requests_get_a_status_never_unknown(server, make_stub):
    stub = make_stub(server.target)
    inputs = [TensorSpec("x", "int64_t")]
    session_id = stub.OpenSession(_open_request(inputs), timeout=DEADLINE).session_id
    cases = {
        "no outputs": (
            lambda: stub.OpenSession(_open_request(inputs, []), timeout=DEADLINE),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        "empty name": (
            lambda: stub.OpenSession(_raw_open_named(""), timeout=DEADLINE),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        "unknown session": (
            lambda: stub.Evaluate(pb.EvaluateRequest(session_id=0), timeout=DEADLINE),
            grpc.StatusCode.NOT_FOUND,
        ),
        "missing input": (
            lambda: stub.Evaluate(pb.EvaluateRequest(session_id=session_id), timeout=DEADLINE),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        "short input": (
            lambda: stub.Evaluate(
                pb.EvaluateRequest(session_id=session_id, inputs=[b"\0"]), timeout=DEADLINE
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    }
    for what, (call, expected) in cases.items():
        assert _code(call)[0] == expected, what
    for first, later in [
        (pb.StreamRequest(), None),
        (pb.StreamRequest(evaluate=pb.EvaluateRequest()), None),
        (
            pb.StreamRequest(open=_open_request(inputs)),
            pb.StreamRequest(open=_open_request(inputs)),
        ),
    ]:
        stream = Stream(server.target)
        stream.send(first)
        if later is not None:
            stream.send(later)
        code, details = _code(lambda: next(stream.replies))
        stream.close()
        assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    stub.CloseSession(pb.CloseSessionRequest(session_id=session_id), timeout=DEADLINE)
    assert server.servicer.budget.used == 0


def _raw_open_named(name: str) -> Any:
    request = _raw_open([1])
    request.schema.inputs[0].name = name
    return request


def test_unexpected_failure_is_internal_not_unknown(serve, make_stub, monkeypatch):
    running = serve()

    def broken(request: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(running.servicer, "_new_session", broken)
    code, details = _code(
        lambda: make_stub(running.target).OpenSession(
            _open_request([TensorSpec("x", "int64_t")]), timeout=DEADLINE
        )
    )
    assert code == grpc.StatusCode.INTERNAL and "KeyError" in details
    stream = Stream(running.target)
    stream.send(pb.StreamRequest(open=_open_request([TensorSpec("x", "int64_t")])))
    code, details = _code(lambda: next(stream.replies))
    stream.close()
    assert code == grpc.StatusCode.INTERNAL and "KeyError" in details


# -- 4. `mlbridge serve --grpc` cannot bind ----------------------------------------


def _serve_cli(address: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mlbridge.cli",
            "serve",
            "--grpc",
            address,
            "--policy",
            "default",
            "--problem",
            "inlining",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _assert_one_line_error(result: subprocess.CompletedProcess, words: str) -> None:
    """One line ``mlbridge serve: error: cannot bind ...``, exit 2 (docs/cli.md)."""
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mlbridge serve: error: cannot bind") and words in lines[0], (
        result.stderr
    )


def test_serve_refuses_a_regular_file(tmp_path):
    path = tmp_path / "precious.txt"
    path.write_text("keep me")
    _assert_one_line_error(_serve_cli(f"unix:{path}"), "is not a socket")
    assert path.read_text() == "keep me"


def test_serve_refuses_a_missing_directory(tmp_path):
    _assert_one_line_error(_serve_cli(f"unix:{tmp_path}/no/such/dir/m.sock"), "does not exist")


def test_serve_refuses_a_port_in_use():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _assert_one_line_error(_serve_cli(f"127.0.0.1:{port}"), "in use")


def test_serve_does_not_steal_a_live_socket(serve):
    running = serve()
    _assert_one_line_error(_serve_cli(running.target), "already listening")
    with ModelClient(running.target, INPUTS, OUTPUTS, deadline=DEADLINE) as client:
        client.evaluate(shared._values(1))


# -- acceptance: 64 abandoned streams, 10,000 abandoned sessions ----------------------

#: The RSS bound docs/grpc.md states for this scenario (MiB).
RSS_BOUND_MIB = 300


def _rss_mib(pid: int) -> float:
    fields = dict(
        line.split(":", 1)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if ":" in line
    )
    return int(fields["VmHWM"].split()[0]) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    "options", [[], ["--max-sessions", "10000"]], ids=["defaults", "all-sessions-kept"]
)
@pytest.mark.slow
def test_abandoned_streams_and_sessions_do_not_starve_a_fresh_client(tmp_path, options):
    """With the default limits 4096 of the sessions stay open (the stalest
    are evicted); with --max-sessions 10000 all of them do."""
    target = f"unix:{tmp_path}/model.sock"
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlbridge.cli",
                "serve",
                "--grpc",
                target,
                "--policy",
                f"{ROOT}/tests/cpp/policies/echo.py:echo",
            ]
            + options,
            stderr=log,
        )
    streams: List[Stream] = []
    channel = grpc.insecure_channel(target)
    try:
        grpc.channel_ready_future(channel).result(timeout=30)
        stub = pb_grpc.ModelServiceStub(channel)
        refused = 0
        for _ in range(64):
            stream = Stream(target, deadline=120)
            streams.append(stream)
            try:
                stream.open(INPUTS)
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                refused += 1
        assert refused == 64 - 12  # default: workers (16) - 4 streams at once
        request = pb.OpenSessionRequest(version=1, schema=schema_message(INPUTS, OUTPUTS))
        for _ in range(100):
            calls = [stub.OpenSession.future(request, timeout=30) for _ in range(100)]
            assert all(call.result().session_id for call in calls)
        with ModelClient(target, INPUTS, OUTPUTS, deadline=DEADLINE) as client:
            values = shared._values(9)
            assert client.evaluate(values)["t_double_out"].tobytes() == values["t_double"].tobytes()
        rss = _rss_mib(proc.pid)
        print(f"server peak RSS {rss:.0f} MiB")
        assert rss < RSS_BOUND_MIB
    finally:
        for stream in streams:
            stream.close()
        channel.close()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

"""The Python gRPC model server (mlbridge.grpc_server) with the Python client."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from tensor_cases import ALL_DTYPE_SPECS, random_values

import grpc
from mlbridge.errors import MlbridgeError, ModelError
from mlbridge.grpc_client import ModelClient, schema_message
from mlbridge.grpc_server import AddressError, check_address, start_server
from mlbridge.tensor_spec import TensorSpec
from mlbridge.v1 import model_service_pb2 as pb
from mlbridge.v1 import model_service_pb2_grpc as pb_grpc

INPUTS = ALL_DTYPE_SPECS
OUTPUTS = [TensorSpec(s.name + "_out", s.type_name, s.shape) for s in INPUTS]


def echo(features, context=""):
    if context == "fail":
        raise ValueError("asked to fail")
    return {name + "_out": value for name, value in features.items()}


def _values(seed):
    return random_values(INPUTS, seed)


@pytest.fixture(params=["unix", "tcp"])
def server(request, tmp_path):
    address = f"unix:{tmp_path}/model.sock" if request.param == "unix" else "127.0.0.1:0"
    running = start_server(echo, address)
    yield running
    running.stop(0)


@pytest.mark.parametrize("streaming", [False, True])
def test_all_dtypes_round_trip(server, streaming):
    with ModelClient(server.target, INPUTS, OUTPUTS, streaming=streaming) as client:
        for seed in range(10):
            values = _values(seed)
            got = client.evaluate(values)
            for spec in INPUTS:
                assert got[spec.name + "_out"].tobytes() == values[spec.name].tobytes()


def test_unix_socket_is_private(tmp_path):
    running = start_server(echo, f"unix:{tmp_path}/m.sock")
    try:
        assert stat.S_IMODE(os.stat(tmp_path / "m.sock").st_mode) == 0o600
    finally:
        running.stop(0)


@pytest.mark.parametrize("streaming", [False, True])
def test_policy_error_keeps_the_session(server, streaming):
    with ModelClient(server.target, INPUTS, OUTPUTS, streaming=streaming) as client:
        with pytest.raises(ModelError, match="asked to fail"):
            client.evaluate(_values(1), context="fail")
        values = _values(2)
        got = client.evaluate(values, context="ok")
        assert got["t_int64_t_out"].tobytes() == values["t_int64_t"].tobytes()


def test_concurrent_sessions_do_not_cross_talk(server):
    errors = []

    def run(worker):
        try:
            with ModelClient(server.target, INPUTS, OUTPUTS, streaming=worker % 2 == 1) as client:
                for seed in range(30):
                    values = _values(1000 * worker + seed)
                    got = client.evaluate(values)
                    for spec in INPUTS:
                        if got[spec.name + "_out"].tobytes() != values[spec.name].tobytes():
                            errors.append((worker, seed, spec.name))
        except Exception as err:  # collected, asserted below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert server.servicer.open_sessions == 0


def test_malformed_tensor_is_invalid_argument_naming_it(server):
    stub = pb_grpc.ModelServiceStub(grpc.insecure_channel(server.target))
    with ModelClient(server.target, INPUTS, OUTPUTS) as client:
        open_reply = stub.OpenSession(client._open, timeout=5)
        bad = [bytes(s.nbytes) for s in INPUTS]
        bad[3] = b"\x00"
        with pytest.raises(grpc.RpcError) as info:
            stub.Evaluate(
                pb.EvaluateRequest(session_id=open_reply.session_id, inputs=bad), timeout=5
            )
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "t_uint8_t" in info.value.details()
        with pytest.raises(grpc.RpcError) as info:
            stub.Evaluate(pb.EvaluateRequest(session_id=999999, inputs=bad), timeout=5)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_bad_schema_is_invalid_argument(server):
    stub = pb_grpc.ModelServiceStub(grpc.insecure_channel(server.target))
    schema = schema_message(INPUTS, OUTPUTS)
    schema.inputs[1].dtype = 42
    with pytest.raises(grpc.RpcError) as info:
        stub.OpenSession(pb.OpenSessionRequest(version=1, schema=schema), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "t_double" in info.value.details() and "dtype 42" in info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        stub.OpenSession(
            pb.OpenSessionRequest(version=7, schema=schema_message(INPUTS, OUTPUTS)), timeout=5
        )
    assert "version 7" in info.value.details()


def test_non_loopback_bind_needs_the_explicit_option():
    with pytest.raises(AddressError, match="not a loopback"):
        check_address("0.0.0.0:5000")
    with pytest.raises(AddressError, match="not a loopback"):
        check_address("example.org:5000")
    assert check_address("0.0.0.0:5000", allow_remote=True) == "0.0.0.0:5000"
    assert check_address("[::1]:5000") == "[::1]:5000"
    assert check_address("localhost:5000") == "localhost:5000"


def test_oversized_message_is_rejected(tmp_path):
    """A session declaring a tensor larger than the message limit is refused at
    open; one at the limit opens, and gRPC refuses its framed request."""
    running = start_server(echo, "127.0.0.1:0", max_message_bytes=1024)
    out = [TensorSpec("big_out", "uint8_t", (1,))]
    try:
        with pytest.raises(grpc.RpcError) as info:
            ModelClient(running.target, [TensorSpec("big", "uint8_t", (4096,))], out)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'big'" in info.value.details()
        with ModelClient(running.target, [TensorSpec("big", "uint8_t", (1024,))], out) as client:
            with pytest.raises(grpc.RpcError) as info:
                client.evaluate({"big": np.zeros(1024, np.uint8)})
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        running.stop(0)


def test_server_never_started_fails_within_the_deadline(tmp_path):
    with pytest.raises(grpc.RpcError) as info:
        ModelClient(f"unix:{tmp_path}/nobody.sock", INPUTS, OUTPUTS, deadline=0.5)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("streaming", [False, True])
def test_stalled_policy_fails_within_the_deadline(tmp_path, streaming):
    """A policy that never answers costs the client its deadline, not a hang;
    the client closes cleanly afterwards."""
    release = threading.Event()

    def stall(features, context=""):
        if context == "stall":
            release.wait(30)
        return echo(features)

    running = start_server(stall, f"unix:{tmp_path}/m.sock")
    try:
        with ModelClient(
            running.target, INPUTS, OUTPUTS, streaming=streaming, deadline=0.5
        ) as client:
            client.evaluate(_values(0))
            with pytest.raises((grpc.RpcError, MlbridgeError)) as info:
                client.evaluate(_values(1), context="stall")
            if streaming:
                assert "within 0.5 s" in str(info.value)
            else:
                assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        release.set()
        running.stop(0)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_mutual_tls(tmp_path):
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [str(root / "tests" / "tls" / "make_certs.sh"), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    read = lambda name: (tmp_path / name).read_bytes()  # noqa: E731
    server_creds = grpc.ssl_server_credentials(
        [(read("server.key"), read("server.pem"))],
        root_certificates=read("ca.pem"),
        require_client_auth=True,
    )
    running = start_server(echo, "127.0.0.1:0", credentials=server_creds)
    try:
        creds = grpc.ssl_channel_credentials(read("ca.pem"), read("client.key"), read("client.pem"))
        with ModelClient(running.target, INPUTS, OUTPUTS, credentials=creds) as client:
            values = _values(5)
            got = client.evaluate(values)
            assert got["t_float_out"].tobytes() == values["t_float"].tobytes()
        anonymous = grpc.ssl_channel_credentials(read("ca.pem"))
        with pytest.raises(grpc.RpcError):
            ModelClient(running.target, INPUTS, OUTPUTS, credentials=anonymous, deadline=2)
    finally:
        running.stop(0)

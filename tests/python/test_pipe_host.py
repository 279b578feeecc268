"""PipeHost against a fake compiler (a thread) speaking both protocol modes."""

from __future__ import annotations

import io
import json
import struct
import threading
from typing import Callable, List

import numpy as np
import pytest

from mlbridge.channel import create_channel
from mlbridge.codecs import get_codec
from mlbridge.framing import CONTEXT, ERROR, OBSERVATION, RESULT, read_frame, write_frame
from mlbridge.pipe_host import PipeHost, PolicyFailed, ProtocolError
from mlbridge.tensor_spec import TensorSpec
from mlbridge.training_log import read_training_log

FEATURES = [TensorSpec("n", "int64_t", (1,)), TensorSpec("m", "float", (2, 2))]
ADVICE = TensorSpec("decision", "int64_t", (1,))


class FakeCompiler(threading.Thread):
    """Opens a channel like LLVM and runs ``script(inp, out)``."""

    def __init__(self, base: str, script: Callable[[io.RawIOBase, io.BufferedWriter], None]):
        super().__init__(daemon=True)
        self.base, self.script = base, script
        self.error = None

    def run(self) -> None:
        try:
            with (
                open(self.base + ".in", "rb", buffering=0) as inp,
                open(self.base + ".out", "wb") as out,
            ):
                self.script(inp, out)
        except Exception as err:  # noqa: BLE001 - reported by the test
            self.error = err


def _mlgo_header() -> bytes:
    return (
        json.dumps(
            {"features": [s.to_json() for s in FEATURES], "advice": ADVICE.to_json()}
        ).encode()
        + b"\n"
    )


def _observation(i: int, n: int) -> bytes:
    m = np.array([[10.0, i], [0.5, -1]], np.float32)  # 10 -> 0x0a bytes? n=10 too
    return b'{"observation":%d}\n' % i + struct.pack("<q", n) + m.tobytes() + b"\n"


def _serve(script, policy, **kwargs):
    with create_channel() as channel:
        fake = FakeCompiler(channel.base, script)
        fake.start()
        host = PipeHost(policy, open_timeout=5, io_timeout=5, **kwargs)
        try:
            return host.serve(channel.base)
        finally:
            fake.join(5)
            assert not fake.is_alive()
            if fake.error is not None:
                raise fake.error


def test_mlgo_mode_with_context_and_newline_bytes():
    replies: List[int] = []
    seen = []

    def script(inp, out):
        out.write(_mlgo_header() + b'{"context":"f"}\n')
        for i in range(5):
            out.write(_observation(i, 10 + i))  # n=10 is a 0x0a byte
            out.flush()
            replies.append(struct.unpack("<q", inp.read(8))[0])

    def policy(features, context=""):
        seen.append((context, features["m"].shape, float(features["m"][0, 1])))
        return int(features["n"][0]) * 2

    stats = _serve(script, policy)
    assert replies == [20, 22, 24, 26, 28]
    assert seen[0] == ("f", (2, 2), 0.0) and seen[4][2] == 4.0
    assert stats.mode == "mlgo" and stats.decisions == 5 and stats.contexts == 1
    assert stats.host_seconds_per_decision > 0


def test_reply_times_are_sampled_one_decision_in_eight():
    def script(inp, out):
        out.write(_mlgo_header())
        for i in range(20):
            out.write(_observation(i, i))
            out.flush()
            inp.read(8)

    stats = _serve(script, lambda f: 0)
    assert stats.decisions == 20 and stats.timed_decisions == 3  # the 1st, 9th, 17th
    assert stats.reply_seconds_per_decision > 0
    assert stats.reply_seconds == pytest.approx(stats.reply_seconds_per_decision * 20)
    assert stats.to_dict()["reply_seconds_per_decision"] == stats.reply_seconds_per_decision


def test_policy_failure_names_its_observation_after_fast_path_records():
    def script(inp, out):
        out.write(_mlgo_header() + b'{"context":"f"}\n')
        for i in range(4):
            out.write(_observation(i, i))
            out.flush()
            if i < 3:
                inp.read(8)

    def policy(features, context=""):
        if int(features["n"][0]) == 3:
            raise ValueError("boom")
        return 0

    with pytest.raises(PolicyFailed, match="on observation 3 of context 'f': ValueError: boom"):
        _serve(script, policy)


def test_mlgo_training_log_has_decision_last():
    log = io.BytesIO()

    def script(inp, out):
        out.write(_mlgo_header() + b'{"context":"g"}\n' + _observation(0, 3))
        out.flush()
        inp.read(8)

    _serve(script, lambda f: 1, log=log)
    log.seek(0)
    records = list(read_training_log(log))
    assert len(records) == 1
    assert list(records[0].tensors) == ["n", "m", "decision"]
    assert records[0].context == "g" and int(records[0].tensors["decision"][0]) == 1


def test_mlgo_policy_failure_raises():
    def script(inp, out):
        out.write(_mlgo_header() + b'{"context":""}\n' + _observation(0, 1))
        out.flush()

    def policy(features):
        raise ValueError("boom")

    with pytest.raises(PolicyFailed, match="boom"):
        _serve(script, policy)


def test_mlgo_bad_answer_is_a_policy_failure():
    def script(inp, out):
        out.write(_mlgo_header() + b'{"context":""}\n' + _observation(0, 1))
        out.flush()

    with pytest.raises(PolicyFailed, match="decision"):
        _serve(script, lambda f: [1, 2, 3])


def test_garbage_header():
    def script(inp, out):
        out.write(b"\x00garbage\xff\n")

    with pytest.raises(ProtocolError, match="header"):
        _serve(script, lambda f: 0)


def test_compiler_dies_mid_observation():
    def script(inp, out):
        out.write(_mlgo_header() + b'{"context":""}\n' + _observation(0, 1)[:-9])

    with pytest.raises(ProtocolError, match="closed after"):
        _serve(script, lambda f: 0)


def test_clean_eof_after_header_and_max_requests():
    def script(inp, out):
        out.write(_mlgo_header())

    assert _serve(script, lambda f: 0).decisions == 0

    def script2(inp, out):
        out.write(_mlgo_header() + b'{"context":""}\n' + _observation(0, 1) + _observation(1, 1))
        out.flush()
        inp.read(8)

    assert _serve(script2, lambda f: 0, max_requests=1).decisions == 1


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_extended_mode_multi_output_and_errors(fmt):
    outputs = [TensorSpec("a", "int64_t", (1,)), TensorSpec("b", "float", (3,))]
    codec = get_codec(fmt)
    got = []

    def script(inp, out):
        hello = {
            "mlbridge": 1,
            "format": fmt,
            "features": [s.to_json() for s in FEATURES],
            "outputs": [s.to_json() for s in outputs],
        }
        out.write(json.dumps(hello).encode() + b"\n")
        out.flush()
        assert inp.readline() == b'{"mlbridge":1}\n'
        write_frame(out, CONTEXT, "fn".encode())
        for i in range(3):
            feats = {"n": np.array([i], np.int64), "m": np.full((2, 2), 10, np.float32)}
            write_frame(out, OBSERVATION, codec.encode_request(i, FEATURES, feats))
            kind, payload = read_frame(inp)
            got.append(
                (kind, codec.decode_reply(payload, outputs) if kind == RESULT else payload.decode())
            )

    def policy(features, context):
        n = int(features["n"][0])
        if n == 1:
            raise RuntimeError("policy broke")
        return {"a": n, "b": [0.1, 0.2, float(len(context))]}

    stats = _serve(script, policy)
    assert [k for k, _ in got] == [RESULT, ERROR, RESULT]
    assert int(got[2][1]["a"][0]) == 2 and got[2][1]["b"][2] == 2.0
    assert "policy broke" in got[1][1]
    assert stats.mode == "extended" and stats.decisions == 2 and stats.errors_reported == 1


def test_extended_handshake_refused_for_other_versions():
    answer = []

    def script(inp, out):
        out.write(b'{"mlbridge":2,"format":"json","features":[],"outputs":[]}\n')
        out.flush()
        answer.append(inp.readline())

    with pytest.raises(ProtocolError, match="version"):
        _serve(script, lambda f: 0)
    reply = json.loads(answer[0])
    assert reply["mlbridge"] == 1 and "version" in reply["error"]

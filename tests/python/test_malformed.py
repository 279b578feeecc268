"""Hostile and broken inputs: every decoder fails with a specific CodecError."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from mlbridge.codecs import FORMATS, get_codec
from mlbridge.codecs.protobuf_codec import load_tensor_pb2
from mlbridge.errors import CodecError, EndOfStream, FrameError, MlbridgeError
from mlbridge.framing import read_frame
from mlbridge.tensor_spec import TensorSpec

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden"
SPECS = [TensorSpec("a", "float", (2,)), TensorSpec("b", "int64_t", (1, 3))]
VALUES = {"a": np.array([1.5, -0.0], np.float32), "b": np.array([[1, 2, 3]], np.int64)}


def json_reply(*tensors, **extra) -> bytes:
    return json.dumps({"tensors": list(tensors), **extra}).encode()


def tensor(name="a", type_="float", shape=(2,), data=(1.0, 2.0)):
    return {"name": name, "type": type_, "shape": list(shape), "data": list(data)}


GOOD_B = tensor("b", "int64_t", (1, 3), (1, 2, 3))


def pb_reply(*tensors, **fields) -> bytes:
    pb2 = load_tensor_pb2()
    message = pb2.TensorMessage(**fields)
    for name, dtype, shape, data in tensors:
        message.tensors.add(name=name, dtype=dtype, shape=shape, data=data)
    return message.SerializeToString()


GOOD_PB_A = ("a", 1, [2], np.array([1, 2], np.float32).tobytes())
GOOD_PB_B = ("b", 9, [1, 3], np.array([1, 2, 3], np.int64).tobytes())


# --- every format: garbage, truncation, flips, size bound -------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"\x00",
        b"\xff" * 7,
        b"{",
        b"\x12\xff\xff\xff\xff\x0f",
        b"null",
        "é".encode(),
        bytes(range(256)),
    ],
)
def test_garbage(fmt, garbage):
    with pytest.raises(CodecError):
        get_codec(fmt).decode_reply(garbage, SPECS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_truncation_is_an_error(fmt):
    codec = get_codec(fmt)
    payload = codec.encode_request(4, SPECS, VALUES)
    for cut in range(len(payload)):
        with pytest.raises(CodecError):
            codec.decode_request(payload[:cut], SPECS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_corruption_never_escapes_as_another_exception(fmt):
    codec = get_codec(fmt)
    specs = [
        TensorSpec(t["name"], t["type"], tuple(t["shape"]))
        for t in json.loads((GOLDEN / "cases.json").read_text())[-1]["tensors"]
    ]
    payload = (GOLDEN / f"eviction_like.{fmt}.bin").read_bytes()
    rng = np.random.default_rng(7)
    for _ in range(300):
        data = bytearray(payload)
        for pos in rng.integers(0, len(data), rng.integers(1, 4)):
            data[pos] = int(rng.integers(0, 256))
        try:
            codec.decode_request(bytes(data), specs)
        except CodecError:
            pass


@pytest.mark.parametrize("fmt", FORMATS)
def test_payload_over_the_bound_is_rejected_first(fmt):
    codec = get_codec(fmt, max_bytes=16)
    with pytest.raises(CodecError, match="payload of 17 bytes exceeds the maximum of 16"):
        codec.decode_reply(b"{" * 17, SPECS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_payload_must_be_bytes(fmt):
    with pytest.raises(CodecError, match="payload must be bytes"):
        get_codec(fmt).decode_reply("text", SPECS)


# --- encoding side -----------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "tensors, message",
    [
        ({"a": [1.0, 2.0]}, "tensor 'b' is missing"),
        ({**VALUES, "c": [1]}, "tensor 'c' is not declared"),
        ({"a": [1.0, 2.0, 3.0], "b": [[1, 2, 3]]}, "tensor 'a': expected 2 elements"),
        ({"a": [1.0, 2.0], "b": [1.5, 2, 3]}, "tensor 'b': values of dtype float64 do not fit"),
        ({"a": [1.0, 2.0], "b": [np.nan, 2, 3]}, "tensor 'b': values of dtype float64 do not fit"),
        ({"a": ["x", "y"], "b": [1, 2, 3]}, "tensor 'a': cannot convert the value to float"),
        ({"a": [1.0, 2.0], "b": [2**64, 2, 3]}, "tensor 'b'"),
    ],
)
def test_encoding_checks_the_schema(fmt, tensors, message):
    with pytest.raises(CodecError, match=message):
        get_codec(fmt).encode_reply(SPECS, tensors)


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
@pytest.mark.parametrize("observation", [-1, 2**64, "3", True, 1.0])
def test_bad_observation_number(fmt, observation):
    with pytest.raises(CodecError, match="observation must be an integer"):
        get_codec(fmt).encode_request(observation, SPECS, VALUES)


# --- bitstream ---------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 31, 33])
def test_bitstream_needs_the_exact_size(size):
    with pytest.raises(
        CodecError,
        match=f"payload has {size} bytes, the schema needs exactly "
        r"32 \(a: 8, b: 24\)",
    ):
        get_codec("bitstream").decode_request(bytes(size), SPECS)


# --- json --------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"not json", "invalid JSON"),
        (b'{"tensors":[]} trailing', "invalid JSON"),
        (b"\xff\xfe{}", "invalid JSON"),
        (b"[" * 100000 + b"]" * 100000, "invalid JSON"),
        (b"[1,2]", "expected a JSON object, got list"),
        (b'{"tensors":{}}', "'tensors' must be a list, got dict"),
        (b'{"data":[]}', "'tensors' must be a list, got NoneType"),
        (b'{"tensors":[3]}', r"tensors\[0\] must be an object"),
        (b'{"error":5,"tensors":[]}', "'error' must be a string"),
        (json_reply({"name": "a", "type": "float", "shape": [2]}), "tensor 'a' lacks key 'data'"),
        (
            json_reply({"type": "float", "shape": [2], "data": [1, 2]}),
            "tensor '0' lacks key 'name'",
        ),
        (json_reply(tensor(name=7), GOOD_B), "tensor name must be a string, got 7"),
        (json_reply(tensor(), GOOD_B, tensor("c")), "tensor 'c' is not declared"),
        (json_reply(tensor(), tensor()), "tensor 'a' appears twice"),
        (json_reply(GOOD_B), "tensor 'a' is missing"),
        (json_reply(tensor(type_="double"), GOOD_B), "tensor 'a' has type double, declared float"),
        (json_reply(tensor(type_="float16"), GOOD_B), "tensor 'a' has type float16"),
        (
            json_reply(tensor(shape=(3,), data=(1, 2, 3)), GOOD_B),
            r"tensor 'a' has 3 elements \(shape \[3\]\), declared 2 \(shape \[2\]\)",
        ),
        (
            json_reply(tensor(data=(1,)), GOOD_B),
            "tensor 'a': 'data' must be a flat list of 2 values, got 1",
        ),
        (json_reply(tensor(data=(1, 2, 3)), GOOD_B), "got 3 values"),
        (json_reply(tensor(shape=(2,), data=([1], [2])), GOOD_B), "must be JSON numbers, got list"),
        (json_reply({**tensor(), "data": "12"}, GOOD_B), "flat list of 2 values, got str"),
        (json_reply({**tensor(), "shape": 2}, GOOD_B), "'shape' must be a list"),
        (json_reply(tensor(shape=(-2,)), GOOD_B), "tensor 'a': bad dimension -2"),
        (json_reply(tensor(shape=(2.0,)), GOOD_B), "must hold integers"),
        (json_reply(tensor(shape=(True, 2)), GOOD_B), "must hold integers"),
        (json_reply(tensor(shape=(2**62, 2**62, 0)), GOOD_B), "bad dimension 4611686018427387904"),
        (json_reply(tensor(shape=(2**30, 2**30)), GOOD_B), "has more than 1099511627776 elements"),
        (json_reply(tensor(data=("1", 2)), GOOD_B), "float values must be JSON numbers, got str"),
        (json_reply(tensor(data=(True, 2)), GOOD_B), "got bool"),
        (json_reply(tensor(data=(None, 2)), GOOD_B), "got NoneType"),
        (json_reply(tensor(data=(10**400, 2)), GOOD_B), "invalid JSON|out of range"),
        (
            json_reply(tensor(data=(2**1100, 2)), GOOD_B),
            "an integer value is out of range for float",
        ),
        (
            json_reply(tensor(), tensor("b", "int64_t", (1, 3), (1, 2.0, 3))),
            "tensor 'b': int64_t values must be JSON integers, got float",
        ),
        (
            json_reply(tensor(), tensor("b", "int64_t", (1, 3), (1, 2**63, 3))),
            "tensor 'b': value 9223372036854775808 is out of range for int64_t",
        ),
        (
            json_reply(tensor(), tensor("b", "int64_t", (1, 3), (1, -(2**63) - 1, 3))),
            "value -9223372036854775809 is out of range",
        ),
    ],
)
def test_json_reply_errors(payload, message):
    with pytest.raises(CodecError, match=message):
        get_codec("json").decode_reply(payload, SPECS)


@pytest.mark.parametrize(
    "type_name, value",
    [
        ("int8_t", 128),
        ("uint8_t", -1),
        ("int16_t", -32769),
        ("uint16_t", 65536),
        ("int32_t", 2**31),
        ("uint32_t", 2**32),
        ("uint64_t", 2**64),
    ],
)
def test_json_integer_ranges(type_name, value):
    specs = [TensorSpec("x", type_name, (1,))]
    expected = f"tensor 'x': value {value} is out of range for {type_name}"
    with pytest.raises(CodecError, match=expected):
        get_codec("json").decode_reply(json_reply(tensor("x", type_name, (1,), (value,))), specs)


def test_json_request_needs_an_observation():
    codec = get_codec("json")
    for payload, shown in [
        (json_reply(tensor(), GOOD_B), "None"),
        (json_reply(tensor(), GOOD_B, observation=-1), "-1"),
        (json_reply(tensor(), GOOD_B, observation=1.5), "1.5"),
        (json_reply(tensor(), GOOD_B, observation=2**64), str(2**64)),
    ]:
        with pytest.raises(CodecError, match=f"'observation' must be an integer.*got {shown}"):
            codec.decode_request(payload, SPECS)


def test_json_nan_handling():
    codec = get_codec("json")
    specs = [TensorSpec("x", "float", (3,))]
    ok = b'{"tensors":[{"name":"x","type":"float","shape":[3],"data":[NaN,-Infinity,Infinity]}]}'
    out = codec.decode_reply(ok, specs)["x"]
    assert np.isnan(out[0]) and out[1] == -np.inf and out[2] == np.inf
    for bad in (b"nan", b"inf", b"-nan", b"+1"):
        with pytest.raises(CodecError, match="invalid JSON"):
            codec.decode_reply(ok.replace(b"NaN", bad), specs)
    with pytest.raises(CodecError, match="got str"):
        codec.decode_reply(ok.replace(b"NaN", b'"NaN"'), specs)
    int_specs = [TensorSpec("x", "int32_t", (3,))]
    with pytest.raises(
        CodecError, match="tensor 'x': int32_t values must be JSON integers, got float"
    ):
        codec.decode_reply(ok.replace(b'"float"', b'"int32_t"'), int_specs)


# --- protobuf ----------------------------------------------------------------


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"\x12" + varint(2**60) + b"\x0a", "malformed protobuf"),
        (b"\x12" + varint(1000) + b"\x0a\x01a", "malformed protobuf"),
        (b"\x12\x05\x22" + varint(2**31) + b"\x00", "malformed protobuf"),
        (b"\x08", "malformed protobuf"),  # truncated varint
        (b"\x08" + b"\xff" * 11, "malformed protobuf"),  # overlong varint
        (b"\x1a\x02\xff\xfe", "malformed protobuf"),  # error string that is not UTF-8
        (b"\x12\x02\x0a", "malformed protobuf"),
        (pb_reply(GOOD_PB_B), "tensor 'a' is missing"),
        (pb_reply(GOOD_PB_A, GOOD_PB_B, ("x", 1, [1], b"1234")), "tensor 'x' is not declared"),
        (pb_reply(GOOD_PB_A, GOOD_PB_A, GOOD_PB_B), "tensor 'a' appears twice"),
        (
            pb_reply(("a", 2, [2], bytes(16)), GOOD_PB_B),
            "tensor 'a' has type double, declared float",
        ),
        (
            pb_reply(("a", 0, [2], bytes(8)), GOOD_PB_B),
            "has type <unknown dtype 0>, declared float",
        ),
        (pb_reply(("a", 99, [2], bytes(8)), GOOD_PB_B), "has type <unknown dtype 99>"),
        (pb_reply(("a", 1, [3], bytes(12)), GOOD_PB_B), "tensor 'a' has 3 elements"),
        (
            pb_reply(("a", 1, [2], bytes(7)), GOOD_PB_B),
            r"tensor 'a' carries 7 bytes, expected 8 \(2 x float\)",
        ),
        (pb_reply(("a", 1, [2], bytes(9)), GOOD_PB_B), "carries 9 bytes"),
        (pb_reply(("a", 1, [-1, -2], bytes(8)), GOOD_PB_B), "bad dimension -1"),
        (
            pb_reply(("a", 1, [2**40, 2**40], bytes(8)), GOOD_PB_B),
            "more than 1099511627776 elements",
        ),
        (pb_reply(("a", 1, [2**62, 0], bytes(8)), GOOD_PB_B), "bad dimension"),
    ],
)
def test_protobuf_reply_errors(payload, message):
    with pytest.raises(CodecError, match=message):
        get_codec("protobuf").decode_reply(payload, SPECS)


def test_protobuf_absurd_length_does_not_allocate():
    # A 100-byte message whose data field claims 4 GiB: rejected from the bytes at hand.
    payload = b"\x12" + varint(2**32) + b"\x22" + varint(2**32 - 8) + bytes(90)
    with pytest.raises(CodecError, match="malformed protobuf"):
        get_codec("protobuf").decode_request(payload, SPECS)


def test_model_error_is_not_a_codec_error():
    from mlbridge.errors import ModelError

    assert issubclass(ModelError, MlbridgeError) and not issubclass(ModelError, CodecError)
    assert issubclass(CodecError, ValueError)


# --- frames --------------------------------------------------------------------


class Recorder(io.BytesIO):
    """Records the size of every read request."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.requests = []

    def read(self, size=-1):
        self.requests.append(size)
        return super().read(size)


@pytest.mark.parametrize(
    "data, error, message",
    [
        (b"", EndOfStream, "end of stream"),
        (b"\x01\x00\x00", FrameError, "truncated frame header: stream ended after 3 of 8 bytes"),
        (
            struct.pack("<II", 5, 3) + b"abc",
            FrameError,
            "truncated RESULT frame payload: stream ended after 3 of 5 bytes",
        ),
        (struct.pack("<II", 0, 0), FrameError, "unknown frame kind 0"),
        (struct.pack("<II", 2, 5) + b"ab", FrameError, "unknown frame kind 5"),
        (
            struct.pack("<II", 0xFFFFFFFF, 2),
            FrameError,
            "OBSERVATION frame claims 4294967295 bytes, more than the maximum of 67108864",
        ),
    ],
)
def test_bad_frames(data, error, message):
    with pytest.raises(error, match=message):
        read_frame(io.BytesIO(data))


def test_frame_length_is_never_trusted_for_allocation():
    stream = Recorder(struct.pack("<II", 60 << 20, 2) + b"x" * 10)
    with pytest.raises(FrameError, match="ended after 10 of 62914560 bytes"):
        read_frame(stream)
    assert max(stream.requests) <= 1 << 20


def test_frame_bound_is_configurable():
    with pytest.raises(FrameError, match="more than the maximum of 4"):
        read_frame(io.BytesIO(struct.pack("<II", 5, 1) + b"hello"), max_bytes=4)
    assert read_frame(io.BytesIO(struct.pack("<II", 4, 1) + b"hell"), max_bytes=4) == (1, b"hell")

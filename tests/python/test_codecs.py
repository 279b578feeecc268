"""Round trips of the three codecs, canonical JSON text, protobuf agreement."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mlbridge.codecs import FORMATS, get_codec
from mlbridge.codecs.protobuf_codec import load_tensor_pb2
from mlbridge.errors import CodecError, MlbridgeError, ModelError
from mlbridge.jsontext import format_float32, format_float64, quote_string
from mlbridge.tensor_spec import DTYPES, PROTO_DTYPES, TensorSpec

SHAPES = [(), (1,), (5,), (2, 3), (2, 3, 4), (0,), (3, 0, 2)]


def sample(type_name: str, shape, seed: int = 0) -> np.ndarray:
    """Deterministic values of a dtype, covering its extremes when room allows."""
    dtype = DTYPES[type_name]
    count = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        pool = np.array(
            [
                0.0,
                -0.0,
                1.5,
                -2.25,
                0.1,
                1e-7,
                np.inf,
                -np.inf,
                np.nan,
                np.finfo(dtype).max,
                np.finfo(dtype).tiny,
                1e-40,
            ],
            dtype,
        )
        values = np.concatenate([pool, rng.standard_normal(count).astype(dtype)])[:count]
    else:
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.max, 0, 1, info.max - 1, 10], dtype)
        values = np.concatenate(
            [pool, rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)]
        )[:count]
    return values.astype(dtype).reshape(shape)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("type_name", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip_every_dtype_and_shape(fmt, type_name, shape):
    codec = get_codec(fmt)
    specs = [TensorSpec("t", type_name, shape), TensorSpec("other", "int64_t", (2,))]
    tensors = {"t": sample(type_name, shape), "other": np.array([-5, 5], np.int64)}
    observation, decoded = codec.decode_request(codec.encode_request(7, specs, tensors), specs)
    assert observation == (-1 if fmt == "bitstream" else 7)
    assert list(decoded) == ["t", "other"]
    for name, value in tensors.items():
        assert same_bits(decoded[name], value), name
    reply = codec.decode_reply(codec.encode_reply(specs, tensors), specs)
    for name, value in tensors.items():
        assert same_bits(reply[name], value), name


@pytest.mark.parametrize("fmt", FORMATS)
def test_many_tensors_and_python_values(fmt):
    codec = get_codec(fmt)
    specs = [TensorSpec(f"f{i}", "int64_t", (1,)) for i in range(38)]
    specs.append(TensorSpec("reward", "float", ()))
    tensors = {f"f{i}": [i * 1000 - 7] for i in range(38)}
    tensors["reward"] = 2  # a Python int fits a float exactly
    _, decoded = codec.decode_request(codec.encode_request(123456789012, specs, tensors), specs)
    assert [int(decoded[f"f{i}"][0]) for i in range(38)] == [i * 1000 - 7 for i in range(38)]
    assert decoded["reward"].dtype == np.float32 and float(decoded["reward"]) == 2.0


@pytest.mark.parametrize("fmt", FORMATS)
def test_decoded_arrays_are_writable_and_shaped(fmt):
    codec = get_codec(fmt)
    specs = [TensorSpec("m", "int32_t", (2, 2))]
    out = codec.decode_reply(codec.encode_reply(specs, {"m": [[1, 2], [3, 4]]}), specs)
    assert out["m"].shape == (2, 2)
    out["m"][0, 0] = 9  # not a read-only view of the payload


def test_get_codec_rejects_unknown_format():
    with pytest.raises(CodecError, match="unknown format 'xml'"):
        get_codec("xml")


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_error_reply_raises_model_error(fmt):
    codec = get_codec(fmt)
    payload = codec.encode_error("policy exploded")
    with pytest.raises(ModelError, match="policy exploded") as info:
        codec.decode_reply(payload, [TensorSpec("y", "float", (1,))])
    assert info.value.model_message == "policy exploded"


def test_json_error_reply_text():
    assert get_codec("json").encode_error('bad "x"') == b'{"error":"bad \\"x\\""}'


def test_missing_generated_module_says_how_to_make_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlbridge.v1.tensor_pb2", None)
    with pytest.raises(MlbridgeError, match="run 'python tools/gen_proto.py'"):
        get_codec("protobuf")
    get_codec("json")  # the other formats do not need it


def test_gen_proto_is_idempotent():
    pytest.importorskip("grpc_tools")
    root = Path(__file__).resolve().parents[2]
    target = root / "python" / "mlbridge" / "v1" / "tensor_pb2.py"
    before = target.read_bytes()
    result = subprocess.run(
        [sys.executable, str(root / "tools" / "gen_proto.py")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and target.read_bytes() == before


def test_bitstream_has_no_error_encoding():
    with pytest.raises(CodecError, match="ERROR frame"):
        get_codec("bitstream").encode_error("boom")


# --- canonical JSON text ---------------------------------------------------


def test_json_canonical_example_from_protocol():
    specs = [TensorSpec("a", "float", (2,))]
    payload = get_codec("json").encode_request(3, specs, {"a": np.array([1.5, -0.0], np.float32)})
    assert payload == (
        b'{"observation":3,"tensors":[{"name":"a","type":"float","shape":[2],"data":[1.5,-0]}]}'
    )


def test_json_canonical_reply_and_scalar_and_empty():
    specs = [
        TensorSpec("s", "double", ()),
        TensorSpec("e", "int8_t", (0, 3)),
        TensorSpec("u", "uint64_t", (1,)),
    ]
    payload = get_codec("json").encode_reply(
        specs, {"s": 1e16, "e": np.zeros((0, 3), np.int8), "u": [2**64 - 1]}
    )
    assert payload == (
        b'{"tensors":[{"name":"s","type":"double","shape":[],"data":[1e+16]},'
        b'{"name":"e","type":"int8_t","shape":[0,3],"data":[]},'
        b'{"name":"u","type":"uint64_t","shape":[1],'
        b'"data":[18446744073709551615]}]}'
    )


def test_json_non_finite_tokens():
    specs = [TensorSpec("x", "double", (3,))]
    codec = get_codec("json")
    payload = codec.encode_reply(specs, {"x": [math.nan, math.inf, -math.inf]})
    assert b'"data":[NaN,Infinity,-Infinity]' in payload
    assert json.loads(payload)["tensors"][0]["data"][1] == math.inf


def test_json_decoder_accepts_any_layout():
    specs = [TensorSpec("a", "float", (2,)), TensorSpec("b", "int64_t", (1,))]
    payload = b"""
      { "extra": {"ignored": [1, 2]},
        "tensors": [ {"data": [ 2 ], "shape": [1], "type": "int64_t", "name": "b"},
                     {"name": "a", "type": "float", "shape": [2, 1], "data": [-0, 1e0],
                      "note": "x"} ],
        "observation": 9 }"""
    observation, tensors = get_codec("json").decode_request(payload, specs)
    assert observation == 9 and list(tensors) == ["a", "b"]
    assert tensors["a"].tobytes() == np.array([-0.0, 1.0], np.float32).tobytes()
    assert tensors["b"].tolist() == [2]


def test_json_negative_zero_in_float_and_int_tensors():
    specs = [TensorSpec("f", "double", (3,)), TensorSpec("i", "int32_t", (2,))]
    payload = (
        b'{"tensors":[{"name":"f","type":"double","shape":[3],"data":[-0,-0.0,-0.5]},'
        b'{"name":"i","type":"int32_t","shape":[2],"data":[-0,-05e0]}]}'
    )
    with pytest.raises(CodecError):  # -05e0 is not valid JSON
        get_codec("json").decode_reply(payload, specs)
    payload = payload.replace(b"-05e0", b"-10")
    out = get_codec("json").decode_reply(payload, specs)
    assert [math.copysign(1, v) for v in out["f"]] == [-1, -1, -1]
    assert out["i"].tolist() == [0, -10]


def test_json_float32_decoding_avoids_double_rounding():
    # 1 + 2**-24 + 2**-60 reads as the float64 midpoint 1 + 2**-24 between the
    # float32s 1 and 1 + 2**-23; the exact decimal is above it.
    above = "1.00000005960464477539062500000000000000000086736173798840354720596224069595336914062"
    below = "0.99999999999999999999999999999999999999999999999999999999999999999999999999999999999"
    specs = [TensorSpec("x", "float", (3,))]
    payload = (
        '{"tensors":[{"name":"x","type":"float","shape":[3],"data":[%s,%s,%s]}]}'
        % (above, "1.000000059604644775390625", below)
    ).encode()
    out = get_codec("json").decode_reply(payload, specs)["x"]
    assert out[0] == np.float32(1 + 2**-23)  # above the midpoint: rounds up
    assert out[1] == np.float32(1.0)  # exactly the midpoint: ties to even
    assert out[2] == np.float32(1.0)


def test_json_quotes_names_like_llvm():
    assert quote_string("plain_name") == '"plain_name"'
    assert (
        quote_string('a"b\\c\n\t\r\x01\x08\x0c\x7fé')
        == '"a\\"b\\\\c\\n\\t\\r\\u0001\\u0008\\u000c\x7fé"'
    )
    specs = [TensorSpec("é\n", "int8_t", (1,))]
    codec = get_codec("json")
    payload = codec.encode_reply(specs, {"é\n": [1]})
    assert payload.startswith('{"tensors":[{"name":"é\\n"'.encode())
    assert codec.decode_reply(payload, specs)["é\n"].tolist() == [1]


# Expected text from C++17 std::to_chars (libstdc++ 12), keyed by bit pattern.
F32_TO_CHARS = [
    (0x00000000, "0"),
    (0x80000000, "-0"),
    (0x7FC00000, "NaN"),
    (0x7F800000, "Infinity"),
    (0xFF800000, "-Infinity"),
    (0x3DCCCCCD, "0.1"),
    (0x33D6BF95, "1e-07"),
    (0x3727C5AC, "1e-05"),
    (0x38D1B717, "1e-04"),
    (0x3A83126F, "0.001"),
    (0x7F7FFFFF, "3.4028235e+38"),
    (0xFF7FFFFF, "-3.4028235e+38"),
    (0x4CEB79A3, "123456792"),
    (0x4B800000, "16777216"),
    (0x4C000001, "33554436"),
    (0x49742400, "1e+06"),
    (0x47C35000, "1e+05"),
    (0x461C4000, "10000"),
    (0x501502F9, "1e+10"),
    (0x60AD78EC, "1e+20"),
    (0x2F89705F, "2.5e-10"),
    (0x3EAAAAAB, "0.33333334"),
    (0x3E99999A, "0.3"),
    (0x3FC00000, "1.5"),
    (0xC0000000, "-2"),
    (0x42C80000, "100"),
    (0x47F12000, "123456"),
    (0x4996B438, "1234567"),
    (0x4B3C614E, "12345678"),
    (0x00800000, "1.1754944e-38"),
    (0x006CE3EE, "1e-38"),
    (0x00000001, "1e-45"),
    (0x00000002, "3e-45"),
    (0x00000005, "7e-45"),
    (0x000116C2, "1e-40"),
    (0x007FFFFF, "1.1754942e-38"),
    (0x390164EF, "0.0001234"),
    (0x477FE000, "65504"),
    (0x4F800000, "4294967296"),
    (0x35800000, "9.536743e-07"),
    (0x38D18167, "9.99e-05"),
    (0x3851B717, "5e-05"),
    (0x3F1E0000, "0.6171875"),
]
F64_TO_CHARS = [
    (0x0000000000000000, "0"),
    (0x8000000000000000, "-0"),
    (0x7FF8000000000000, "NaN"),
    (0x7FF0000000000000, "Infinity"),
    (0xFFF0000000000000, "-Infinity"),
    (0x4341C37937E08000, "1e+16"),
    (0x430C6BF526340000, "1e+15"),
    (0x3EE4F8B588E368F1, "1e-05"),
    (0x0000000000000001, "5e-324"),
    (0x0000000000000002, "1e-323"),
    (0x0000000000000003, "1.5e-323"),
    (0x7FEFFFFFFFFFFFFF, "1.7976931348623157e+308"),
    (0x0010000000000000, "2.2250738585072014e-308"),
    (0x000FFFFFFFFFFFFF, "2.225073858507201e-308"),
    (0x3FB999999999999A, "0.1"),
    (0x3FD3333333333333, "0.3"),
    (0x3FD5555555555555, "0.3333333333333333"),
    (0x4480F0CF064DD592, "1e+22"),
    (0x44B52D02C7E14AF6, "1e+23"),
    (0x4340000000000000, "9007199254740992"),
    (0x4340000000000001, "9007199254740994"),
    (0x43B0000000000000, "1152921504606846976"),
    (0x43F0000000000000, "18446744073709551616"),
    (0x419D6F3454000000, "123456789"),
    (0x437B69B4BA630F35, "123456789012345680"),
    (0x54B249AD2594C37D, "1e+100"),
    (0x2B2BFF2EE48E0530, "1e-100"),
    (0x3E8421F5F40D8376, "1.5e-07"),
    (0x3F1A36E2EB1C432D, "1e-04"),
    (0x3F50624DD2F1A9FC, "0.001"),
    (0x3F5437C5692B3CC5, "0.001234"),
    (0x40C81CD6C8B43958, "12345.678"),
    (0x40F86A0000000000, "1e+05"),
    (0x412E848000000000, "1e+06"),
    (0x40C3880000000000, "10000"),
    (0x4271F71FB04CB000, "1234567890123"),
    (0x3E32AEE02610A2F5, "4.35e-09"),
    (0x00005C0AB9347ED7, "5e-310"),
    (0x44DFE185CA57C517, "6.02214076e+23"),
    (0xBFF8000000000000, "-1.5"),
    (0xC341C37937E08000, "-1e+16"),
    (0x47EFFFFFE0000000, "3.4028234663852886e+38"),
    (0x01AA74FE1C1E8908, "1.2345678901234568e-300"),
]


def f32_of(bits: int) -> float:
    return float(np.array([bits], np.uint32).view(np.float32)[0])


def f64_of(bits: int) -> float:
    return float(np.array([bits], np.uint64).view(np.float64)[0])


@pytest.mark.parametrize("bits,text", F32_TO_CHARS)
def test_format_float32_matches_to_chars(bits, text):
    assert format_float32(f32_of(bits)) == text
    if text not in ("NaN",):  # and the text reads back to the same float32
        assert np.float32(float(text.replace("Infinity", "inf"))).view(np.uint32) == bits


@pytest.mark.parametrize("bits,text", F64_TO_CHARS)
def test_format_float64_matches_to_chars(bits, text):
    assert format_float64(f64_of(bits)) == text


def test_format_float32_uses_float32_digits():
    assert format_float32(float(np.float32(0.1))) == "0.1"
    assert format_float64(float(np.float32(0.1))) == "0.10000000149011612"


TO_CHARS_SOURCE = r"""
#include <charconv>
#include <cstdio>
#include <cstring>
int main() {
  char kind; unsigned long long bits; char buf[64];
  while (std::scanf(" %c %llx", &kind, &bits) == 2) {
    std::to_chars_result r;
    if (kind == 'f') { unsigned b = (unsigned)bits; float v; std::memcpy(&v, &b, 4);
                       r = std::to_chars(buf, buf + 64, v); }
    else { double v; std::memcpy(&v, &bits, 8); r = std::to_chars(buf, buf + 64, v); }
    *r.ptr = 0; std::puts(buf);
  }
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ with C++17 to_chars")
def test_format_matches_cpp_to_chars_on_random_values(tmp_path: Path):
    source, binary = tmp_path / "to_chars.cpp", tmp_path / "to_chars"
    source.write_text(TO_CHARS_SOURCE)
    build = subprocess.run(
        ["g++", "-std=c++17", "-O1", str(source), "-o", str(binary)], capture_output=True, text=True
    )
    if build.returncode != 0:
        pytest.skip(f"g++ cannot build std::to_chars for floats: {build.stderr[:200]}")
    rng = np.random.default_rng(2024)
    b32 = np.concatenate(
        [
            rng.integers(0, 2**32, 6000, dtype=np.uint64),
            np.arange(0, 200, dtype=np.uint64),
            np.float32(rng.integers(-(10**9), 10**9, 2000)).view(np.uint32).astype(np.uint64),
        ]
    )
    b64 = np.concatenate(
        [
            rng.integers(0, 2**64, 6000, dtype=np.uint64),
            (rng.integers(-(10**6), 10**6, 2000) * 10**5).astype(np.float64).view(np.uint64),
        ]
    )
    lines = [f"f {int(b):x}" for b in b32] + [f"d {int(b):x}" for b in b64]
    out = subprocess.run(
        [str(binary)], input="\n".join(lines), capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert len(out) >= len(lines)
    expected = [
        t.replace("-nan", "NaN").replace("nan", "NaN").replace("inf", "Infinity")
        for t in out[: len(lines)]
    ]
    got = [format_float32(f32_of(int(b))) for b in b32] + [
        format_float64(f64_of(int(b))) for b in b64
    ]
    mismatches = [(line, g, e) for line, g, e in zip(lines, got, expected) if g != e]
    assert len(got) == len(expected) == 16200
    assert not mismatches[:10]


# --- protobuf agrees with the official generated class ---------------------


def test_protobuf_encoding_is_the_official_serialisation():
    pb2 = load_tensor_pb2()
    specs = [
        TensorSpec("a", "float", (2, 2)),
        TensorSpec("b", "uint64_t", ()),
        TensorSpec("c", "int8_t", (0,)),
    ]
    tensors = {"a": sample("float", (2, 2)), "b": np.uint64(2**64 - 1), "c": np.zeros(0, np.int8)}
    payload = get_codec("protobuf").encode_request(5, specs, tensors)
    expected = pb2.TensorMessage(observation=5)
    for spec in specs:
        expected.tensors.add(
            name=spec.name,
            dtype=spec.proto_dtype,
            shape=spec.shape,
            data=np.asarray(tensors[spec.name], spec.dtype).tobytes(),
        )
    assert payload == expected.SerializeToString()
    parsed = pb2.TensorMessage.FromString(payload)
    assert parsed.observation == 5 and [t.name for t in parsed.tensors] == ["a", "b", "c"]
    assert [t.dtype for t in parsed.tensors] == [PROTO_DTYPES[s.type_name] for s in specs]
    assert list(parsed.tensors[0].shape) == [2, 2] and list(parsed.tensors[1].shape) == []


def test_protobuf_decodes_official_messages_in_any_tensor_order():
    pb2 = load_tensor_pb2()
    message = pb2.TensorMessage(observation=2**63)
    message.tensors.add(name="y", dtype=pb2.INT16, shape=[3], data=b"\x01\x00\xff\xff\x0a\x0a")
    message.tensors.add(name="x", dtype=pb2.DOUBLE, shape=[1, 1], data=np.array([0.25]).tobytes())
    specs = [TensorSpec("x", "double", (1,)), TensorSpec("y", "int16_t", (3,))]
    observation, tensors = get_codec("protobuf").decode_request(message.SerializeToString(), specs)
    assert observation == 2**63
    assert list(tensors) == ["x", "y"]
    assert tensors["x"].tolist() == [0.25] and tensors["y"].tolist() == [1, -1, 0x0A0A]


def test_protobuf_accepts_unpacked_shape_encoding():
    # field 2 (tensor) holding: name "x", dtype INT8, shape 2 as an unpacked varint, data
    tensor = b"\x0a\x01x" + b"\x10\x03" + b"\x18\x02" + b"\x22\x02\x05\x06"
    payload = b"\x12" + bytes([len(tensor)]) + tensor
    out = get_codec("protobuf").decode_reply(payload, [TensorSpec("x", "int8_t", (2,))])
    assert out["x"].tolist() == [5, 6]

"""The pipe host's fast paths give what the general paths give (issue 14).

- float32 rounding of JSON numbers: the bit test that skips the tie
  resolution, against a frozen copy of the previous implementation;
- canonical JSON and protobuf requests decoded in place, against the general
  decoders (values and every error);
- reply templates and scalar encoders, against ``encode_reply`` and the
  golden vectors;
- frames read in place from the FIFO buffer, against ``read_frame``;
- the extended-mode loop: scalar replies in every format, errors.
"""

from __future__ import annotations

import io
import json
import os
import struct
import threading
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import pytest
import test_golden as golden
import test_pipe_host as pipe
from test_hostile_input import _mutations, handshake, serve_bytes

from mlbridge.channel import FdReader
from mlbridge.codecs import FORMATS, get_codec, json_codec
from mlbridge.codecs.schema import arrays_for
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, EndOfStream, FrameError, MlbridgeError
from mlbridge.framing import (
    CONTEXT,
    ERROR,
    OBSERVATION,
    RESULT,
    encode_frame,
    read_frame,
    write_frame,
)
from mlbridge.pipe_host import ProtocolError
from mlbridge.policy import output_arrays
from mlbridge.tensor_spec import TensorSpec

# --- 1. float32 rounding: the previous implementation, frozen -----------------


def reference_to_float32(
    doubles: np.ndarray, exact_data: Callable[[], List[Any]], what: str
) -> np.ndarray:
    """json_codec._to_float32 before the fast path (verbatim), the oracle."""
    with np.errstate(over="ignore", invalid="ignore"):
        singles = doubles.astype(np.float32)
        back = singles.astype(np.float64)
        inexact = (back != doubles) & np.isfinite(singles)
        if not inexact.any():
            return singles
        toward = np.where(doubles > back, np.float32(np.inf), np.float32(-np.inf))
        neighbour = np.nextafter(singles, toward.astype(np.float32)).astype(np.float64)
        gap = np.abs(neighbour - doubles) == np.abs(doubles - back)
    ties = np.flatnonzero(inexact & gap)
    if ties.size:
        exact = exact_data()
        for i in ties:
            try:
                decimal = Decimal(exact[i])
            except InvalidOperation:
                raise CodecError(
                    f"{what}: the number {str(exact[i])[:40]} cannot be rounded to float exactly"
                ) from None
            midpoint = Decimal(float(doubles[i]))
            if decimal != midpoint and (decimal > midpoint) == (neighbour[i] > back[i]):
                singles[i] = np.float32(neighbour[i])
    return singles


def _f64(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, np.uint64).view(np.float64)


def _adversarial_doubles(rng: np.random.Generator) -> np.ndarray:
    """Midpoints between float32 neighbours and their double neighbours, in
    every range (normal, subnormal, below the smallest subnormal, near and
    beyond FLT_MAX), zeros, infinities, NaNs (with the midpoint bit pattern
    too), double subnormals, and random bit patterns."""
    f32 = rng.integers(0, 0x7F800000, 3000, dtype=np.uint64)
    f32 = np.concatenate(
        [
            f32,
            np.arange(0, 40, dtype=np.uint64),  # float32 subnormals
            np.arange(0x00800000 - 20, 0x00800000 + 20, dtype=np.uint64),  # the normal boundary
            np.arange(0x7F7FFFF0, 0x7F800000, dtype=np.uint64),  # up to FLT_MAX
            np.arange(0x3F800000 - 5, 0x3F800000 + 5, dtype=np.uint64),  # around 1
        ]
    )
    low = f32.astype(np.uint32).view(np.float32).astype(np.float64)
    high = (f32 + 1).astype(np.uint32).view(np.float32).astype(np.float64)  # +inf above FLT_MAX
    with np.errstate(invalid="ignore", over="ignore"):
        mid = np.where(np.isinf(high), 2.0**128 - 2.0**103, (low + high) / 2)  # exact
    mid_bits = mid.view(np.uint64)
    near = np.concatenate([mid_bits - 1, mid_bits, mid_bits + 1])
    special = np.array(
        [
            0,
            1,  # the smallest double subnormal
            (1 << 28) | 1,
            1 << 28,  # a double subnormal with the midpoint pattern
            0x000FFFFFFFFFFFFF,
            0x7FF0000000000000,  # inf
            0x7FF8000000000000,  # NaN
            0x7FF8000010000000,  # NaN with the midpoint pattern
            0x7FF0000010000000,  # a signalling NaN payload
            0x47EFFFFFE0000000,  # FLT_MAX
            0x47EFFFFFF0000000,  # the tie between FLT_MAX and 2^128
            0x47F0000000000000,  # 2^128
            0x47E0000000000000,  # 2^127
            0x47DFFFFFF0000000,  # a midpoint just below 2^127
            0x3810000000000000,  # 2^-126
            0x380FFFFFF0000000,  # the midpoint just below 2^-126
            0x3690000000000000,  # 2^-150: half the smallest float32 subnormal
            0x3690000000000001,
            0x368FFFFFFFFFFFFF,
            0x3680000000000000,
        ],
        np.uint64,
    )
    random = rng.integers(0, 1 << 63, 3000, dtype=np.uint64)
    every = np.concatenate([near, special, random])
    signs = np.where(rng.integers(0, 2, every.size) == 1, np.uint64(1 << 63), np.uint64(0))
    return _f64(np.concatenate([every, every | signs, every | np.uint64(1 << 63)]))


def _texts(doubles: np.ndarray, rng: np.random.Generator) -> List[Any]:
    """Exact-number stand-ins as JSON would keep them: the double's exact
    decimal, or a decimal just above or below it, or unrepresentable text."""
    out: List[Any] = []
    for value in doubles.tolist():
        choice = int(rng.integers(0, 5))
        if value != value or value in (np.inf, -np.inf):
            out.append(repr(value))
        elif choice == 0:
            out.append(str(Decimal(value)))
        elif choice == 1:
            out.append(str(Decimal(value)) + "0000000000000000000000000000001")
        elif choice == 2:
            out.append(repr(value))
        elif choice == 3:
            out.append(str(Decimal(value) - Decimal("1e-80") * abs(Decimal(value))))
        else:
            out.append("1e99999999999999999999")  # Decimal cannot hold it
    return out


def _outcome(function: Callable[..., np.ndarray], doubles: np.ndarray, exact: List[Any]) -> Any:
    try:
        return function(doubles.copy(), lambda: exact, "w").view(np.uint32).tolist()
    except CodecError as err:
        return ("CodecError", str(err))


def _ordinary_doubles(rng: np.random.Generator) -> np.ndarray:
    """What compilers send: float32s written shortest and read back as
    float64 (mostly not float32s), small integers, random doubles."""
    f32 = rng.integers(0, 0x7F800000, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    shortest = [float(repr(x)) for x in f32.tolist()]  # repr of a Python float: float64 digits
    shortest += [float(np.format_float_positional(x, unique=True)) for x in f32[:2000]]
    ints = rng.integers(-(2**30), 2**30, 2000).astype(np.float64)
    normal = rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)
    return np.concatenate([np.array(shortest), ints, normal, [0.0, -0.0]])


@pytest.mark.filterwarnings("error")  # the fast path must not cast what overflows
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.slow
def test_float32_rounding_matches_the_previous_implementation(seed):
    rng = np.random.default_rng(seed)
    adversarial, ordinary = _adversarial_doubles(rng), _ordinary_doubles(rng)
    mixed = np.concatenate([adversarial, ordinary])
    for doubles in (adversarial, ordinary, mixed):
        rng.shuffle(doubles)
        exact = _texts(doubles, rng)
        # Whole arrays (the fast path bails out on any tie) and small slices
        # (it takes most of the ordinary ones).
        chunks = [(0, doubles.size)] + [(i, i + 7) for i in range(0, doubles.size, 7)]
        for start, end in chunks:
            part, texts = doubles[start:end], exact[start:end]
            assert _outcome(json_codec._to_float32, part, texts) == _outcome(
                reference_to_float32, part, texts
            ), (start, end)


def _numpy_plain(doubles: np.ndarray) -> bool:
    """The fast-path test of json_codec._to_float32, written with numpy."""
    bits = doubles.view(np.uint64)
    exponents = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    plain = (exponents == 0) | ((exponents >= 897) & (exponents <= 1149))
    midpoint = (bits & np.uint64((1 << 29) - 1)) == np.uint64(1 << 28)
    return bool(plain.all() and not midpoint.any())


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.slow
def test_plain_bits_on_all_lanes_at_once_agree_with_numpy(seed):
    rng = np.random.default_rng(seed)
    doubles = np.concatenate(
        [_adversarial_doubles(rng), _ordinary_doubles(rng), -_ordinary_doubles(rng)]
    )
    rng.shuffle(doubles)
    tried = {True: 0, False: 0}
    for count in (1, 2, 7, 64, 300):
        plain = json_codec._PlainBits(count)
        for start in range(0, doubles.size - count, max(1, count // 2)):
            part = np.ascontiguousarray(doubles[start : start + count])
            expected = _numpy_plain(part)
            assert plain(int.from_bytes(part.tobytes(), "little")) == expected, (count, start)
            tried[expected] += 1
    assert min(tried.values()) > 100, tried  # both answers were exercised


def test_packed_floats_are_what_the_general_conversion_gives(monkeypatch):
    """Canonical float requests skip _values and _to_float32 when the numbers
    are plain, and give what the general path gives either way."""
    spec = TensorSpec("x", "float", (6,))
    codec = get_codec("json")
    cases = {
        "[0.1,-2,16777218,1e-30,-0.0,3.5]": True,  # packed
        "[0.1,-2,16777217,1,2,3]": False,  # a float32 midpoint
        "[0.1,-2,1e39,1,2,3]": False,  # overflows float32: the general path
        "[0.1,2,100000000000000000000000000000000000000000,1,2,3]": False,
        "[0.1,2,1" + "0" * 400 + ",1,2,3]": False,  # overflows float64 too
        "[-0,1,2,3,4,5]": False,  # the token -0
        "[NaN,1,2,3,4,5]": False,
        "[1,-Infinity,2,3,4,5]": False,
        "[true,1,2,3,4,5]": False,  # refused, as by the general path
        "[1,2,3,4,5,false]": False,
        "[1,2,null,3,4,5]": False,
        "[1.5]": False,  # too few numbers (one would broadcast), too many
        "[1.5,2,3,4,5]": False,
        "[1.5,2,3,4,5,6,7]": False,
        "[]": False,
    }
    for data, packed in cases.items():
        payload = (
            '{"observation":3,"tensors":[{"name":"x","type":"float","shape":[6],"data":%s}]}' % data
        ).encode()
        _same_decoding(codec, payload, [spec], TensorBuffer([spec]))
        if packed:
            with monkeypatch.context() as patched:
                patched.setattr(json_codec, "_values", None)  # not called
                _, got = codec.decode_request(payload, [spec], into=TensorBuffer([spec]))
            assert got["x"].tobytes() == codec.decode_request(payload, [spec])[1]["x"].tobytes()


def test_float32_fast_path_is_taken_for_ordinary_values(monkeypatch):
    doubles = np.array([0.0, -0.0, 0.1, -1e-30, 1e38, 1e-310, 1.5, 16777216.0, 16777218.0])
    expected = reference_to_float32(doubles, list, "w").tobytes()
    monkeypatch.setattr(json_codec, "_to_float32_resolving_ties", None)  # not called
    assert json_codec._to_float32(doubles, list, "w").tobytes() == expected


def _float_request(texts: List[str], names: Tuple[str, ...] = ("x",)) -> Tuple[bytes, list]:
    """A canonical json request of float tensors splitting ``texts`` evenly."""
    size = len(texts) // len(names)
    specs = [TensorSpec(name, "float", (size,)) for name in names]
    tensors = ",".join(
        '{"name":"%s","type":"float","shape":[%d],"data":[%s]}'
        % (name, size, ",".join(texts[k * size : (k + 1) * size]))
        for k, name in enumerate(names)
    )
    return ('{"observation":5,"tensors":[%s]}' % tensors).encode(), specs


def _long_decimals(rng: np.random.Generator, count: int) -> List[str]:
    """Decimals of 1 to 40 significant digits over and beyond float32's range,
    and float32 midpoints written exactly and one digit off."""
    texts = []
    for _ in range(count):
        digits = "".join(map(str, rng.integers(0, 10, int(rng.integers(1, 41)))))
        sign = "-" if rng.integers(2) else ""
        texts.append(f"{sign}{int(digits[0]) or 1}.{digits[1:] or 0}e{int(rng.integers(-50, 41))}")
    bits = rng.integers(0x00800000, 0x7F7FFFFF, count // 4, dtype=np.uint64)
    for low in bits.tolist():
        x, y = np.array([low, low + 1], np.uint32).view(np.float32).astype(np.float64).tolist()
        midpoint = (Decimal(x) + Decimal(y)) / 2
        texts += [str(midpoint), str(midpoint) + "1", str(midpoint - Decimal("1e-60"))]
    return texts


@pytest.mark.parametrize("names", [("x",), ("x", "y")])
def test_orjson_reads_float_tensors_as_the_general_path(monkeypatch, names):
    """All-float schemas are read by orjson: its float64s, packed and cast,
    are what json and the general conversion give, on long decimals,
    midpoints, integers of any size, overflow and underflow; and it is taken."""
    assert json_codec._orjson_reads_exactly()
    rng = np.random.default_rng(23)
    codec = get_codec("json")
    odd = ["16777217", "18446744073709551616", "-9223372036854775809", "1e400", "-1e-400"]
    odd += ["123456789012345678901234567890", "1" + "0" * 400, "1E5", "0", "0.0"]
    for round_ in range(30):
        texts = _long_decimals(rng, 60) + odd[: round_ % len(odd)]
        texts = texts[: len(texts) // len(names) * len(names)]
        payload, specs = _float_request(texts, names)
        buffer = TensorBuffer(specs)
        _same_decoding(codec, payload, specs, buffer)
    # Ordinary values: orjson's reading alone (no json scan, no general path).
    values = rng.standard_normal(64).astype(np.float32)
    payload, specs = _float_request([repr(float(v)) for v in values], names)
    monkeypatch.setattr(json_codec, "_SCAN", None)
    monkeypatch.setattr(json_codec, "_values", None)
    _, got = codec.decode_request(payload, specs, into=TensorBuffer(specs))
    assert b"".join(got[n].tobytes() for n in names) == values.tobytes()


def test_an_orjson_that_misreads_floats_is_not_used(monkeypatch):
    """An orjson reading some decimal one unit off (a build without an exact
    fallback) fails the check, and json reads every request instead."""
    real = json_codec.orjson

    class OffByOne:
        JSONDecodeError = real.JSONDecodeError

        @staticmethod
        def loads(data: bytes) -> Any:
            return [
                np.nextafter(x, np.inf).item() if isinstance(x, float) and "e-" in str(x) else x
                for x in real.loads(data)
            ]

    monkeypatch.setattr(json_codec, "orjson", OffByOne)
    json_codec._orjson_reads_exactly.cache_clear()
    try:
        assert not json_codec._orjson_reads_exactly()
        payload, specs = _float_request(["1e-5", "2.5e-3", "0.1", "7"])
        _, got = get_codec("json").decode_request(payload, specs, into=TensorBuffer(specs))
        assert got["x"].tobytes() == np.array([1e-5, 2.5e-3, 0.1, 7], np.float32).tobytes()
    finally:
        json_codec._orjson_reads_exactly.cache_clear()


def test_float32_ties_from_json_text_match_the_previous_implementation():
    """Decimal texts on, above and below float32 midpoints, through the codec
    (general path and in place), against the oracle on the same numbers."""
    rng = np.random.default_rng(11)
    low = rng.integers(0x00800000, 0x7F7FFFFF, 200, dtype=np.uint64)
    low = np.concatenate([low, np.arange(1, 30, dtype=np.uint64)])
    a = low.astype(np.uint32).view(np.float32).astype(np.float64)
    b = (low + 1).astype(np.uint32).view(np.float32).astype(np.float64)
    texts = []
    for x, y in zip(a.tolist(), b.tolist()):
        midpoint = (Decimal(x) + Decimal(y)) / 2
        texts += [str(midpoint), str(midpoint) + "1", str(midpoint - Decimal("1e-60"))]
    texts += ["-0", "0", "-0.0", "16777217", "-16777219", "1e-46", "-7e-46", "3.4028236e38"]
    texts += ["340282356779733661637539395458142568448", "NaN", "Infinity", "-Infinity"]
    spec = TensorSpec("x", "float", (len(texts),))
    payload = (
        '{"observation":1,"tensors":[{"name":"x","type":"float","shape":[%d],"data":[%s]}]}'
        % (len(texts), ",".join(texts))
    ).encode()
    numbers = json.loads(payload, parse_float=str)["tensors"][0]["data"]
    doubles = np.array([float(t) for t in texts])
    doubles[[t == "-0" for t in texts]] = -0.0
    expected = reference_to_float32(doubles, lambda: numbers, "w").tobytes()
    codec = get_codec("json")
    assert codec.decode_request(payload, [spec])[1]["x"].tobytes() == expected
    buffer = TensorBuffer([spec])
    assert codec.decode_request(payload, [spec], into=buffer)[1]["x"].tobytes() == expected


# --- 2. canonical requests decoded in place = the general decoders --------------


def _same_decoding(codec, payload, specs, buffer) -> None:
    """In place and general decoding agree: values, or error class and text."""
    try:
        expected: Any = codec.decode_request(payload, specs)
        expected = (expected[0], {k: v.tobytes() for k, v in expected[1].items()})
    except MlbridgeError as err:
        expected = (type(err), str(err))
    try:
        got: Any = codec.decode_request(payload, specs, into=buffer)
        got = (got[0], {k: v.tobytes() for k, v in got[1].items()})
    except MlbridgeError as err:
        got = (type(err), str(err))
    assert got == expected, payload[:300]


MIXED = [
    TensorSpec("a", "float", (3,)),
    TensorSpec("b", "int64_t", (2,)),
    TensorSpec("c", "float", ()),
    TensorSpec("d", "double", (2,)),
    TensorSpec("e", "uint8_t", (0,)),
    TensorSpec("f", "float", (2, 1)),
    TensorSpec('é "q"', "int32_t", (1,)),
]


def _mixed_values():
    return {
        "a": np.array([0.1, -0.0, np.nan], np.float32),
        "b": np.array([-(2**63), 2**63 - 1], np.int64),
        "c": np.float32(1e-40),
        "d": np.array([1e300, -5e-324]),
        "e": np.zeros(0, np.uint8),
        "f": np.array([[np.inf], [3.5]], np.float32),
        'é "q"': np.array([-7], np.int32),
    }


@pytest.mark.parametrize(
    "edit",
    [
        (b"", b""),
        (b'"observation":7', b'"observation":0'),
        (b'"observation":7', b'"observation":18446744073709551615'),
        (b'"observation":7', b'"observation":18446744073709551616'),
        (b'"observation":7', b'"observation":07'),
        (b'"observation":7', b'"observation":-1'),
        (b'"observation":7', b'"observation":7.0'),
        (b'"observation":7,', b'"observation":7 ,'),
        (b"[0.1,-0,NaN]", b"[0.1,-0,NaN,1]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0,nan]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0,true]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0,null]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0,1e400]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0," + b"9" * 400 + b"]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0," + b"9" * 5000 + b"]"),
        (b"[0.1,-0,NaN]", b"[0.1,,NaN]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0,+1]"),
        (b"[0.1,-0,NaN]", b"[0.1,-0,1.]"),
        (b"[0.1,-0,NaN]", b"[0.1,-00,1]"),
        (b"[0.1,-0,NaN]", b"[1.000000059604644775390625,-0,1]"),
        (b"[0.1,-0,NaN]", b"[1.0000000596046447753906250001,1e-46,-0.0]"),
        (b"[-9223372036854775808,", b"[-9223372036854775809,"),
        (b"[-9223372036854775808,", b"[1.5,"),
        (b"[-9223372036854775808,", b"[-0,"),
        (b"[-7]", b"[2147483648]"),
        (b"[-7]", b"[-0]"),
        (b'"data":[]', b'"data":[1]'),
        (b'"shape":[3]', b'"shape":[3.0]'),
        (b'"shape":[2,1]', b'"shape":[2]'),
        (b'"shape":[2,1]', b'"shape":[1,2]'),
        (b'"type":"double"', b'"type":"float"'),
        (b"}]}", b'}],"x":1}'),
        (b"}]}", b"}]} "),
        (b"}]}", b"}]"),
    ],
)
def test_json_in_place_decoding_matches_the_general_path(edit):
    specs, codec = MIXED, get_codec("json")
    payload = codec.encode_request(7, specs, _mixed_values())
    assert edit[0] in payload
    _same_decoding(codec, payload.replace(*edit), specs, TensorBuffer(specs))


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_in_place_decoding_matches_the_general_path_on_mutations(fmt):
    codec = get_codec(fmt)
    for seed, case in enumerate(golden.CASES + [{"name": "mixed"}]):
        if case["name"] == "mixed":
            specs = MIXED
            payload = codec.encode_request(3, specs, _mixed_values())
        else:
            specs = golden.specs_of(case)
            payload = golden.golden(case, f"{fmt}.bin")
        buffer = TensorBuffer(specs)
        for data in [payload] + _mutations(payload, 60, seed):
            _same_decoding(codec, data, specs, buffer)


def test_json_many_scalar_tensors_and_interleaved_types():
    specs = [TensorSpec(f"f{k}", "float" if k % 5 else "int64_t", (1,)) for k in range(64)]
    codec, buffer = get_codec("json"), TensorBuffer(specs)
    rng = np.random.default_rng(5)
    for observation in range(20):
        values = {
            s.name: rng.standard_normal(1).astype(np.float32)
            if s.type_name == "float"
            else rng.integers(-(2**40), 2**40, 1)
            for s in specs
        }
        payload = codec.encode_request(observation, specs, values)
        got, tensors = codec.decode_request(payload, specs, into=buffer)
        assert got == observation
        assert all(tensors[n].tobytes() == np.asarray(values[n]).tobytes() for n in values)


def test_names_without_a_canonical_encoding_take_the_general_path():
    spec = TensorSpec("bad\ud800", "int64_t", (1,))
    buffer = TensorBuffer([spec])
    payload = (
        b'{"observation":1,"tensors":'
        b'[{"name":"bad\\ud800","type":"int64_t","shape":[1],"data":[5]}]}'
    )
    assert get_codec("json").decode_request(payload, [spec], into=buffer)[1][spec.name] == 5
    with pytest.raises(CodecError):
        get_codec("protobuf").decode_request(b"\x08\x01", [spec], into=buffer)
    for fmt in ("json", "protobuf"):
        assert get_codec(fmt).reply_template([spec]) is None


# --- 3. reply templates = encode_reply = the golden vectors ---------------------


@pytest.mark.parametrize("case", golden.CASES, ids=[c["name"] for c in golden.CASES])
@pytest.mark.parametrize("fmt", FORMATS)
def test_reply_templates_write_the_golden_bytes(case, fmt):
    codec, specs = get_codec(fmt), golden.specs_of(case)
    expected = golden.golden(case, "bitstream.bin" if fmt == "bitstream" else f"reply.{fmt}.bin")
    template = codec.reply_template(specs)
    assert template.encode(arrays_for(specs, golden.tensors_of(case), "r")) == expected
    assert template.size in (None, len(expected))


SCALAR_ANSWERS: List[Any] = [
    0,
    1,
    -1,
    2**31 - 1,
    -(2**31),
    2**31,
    2**63 - 1,
    -(2**63),
    2**63,
    2**70,
    True,
    0.0,
    -0.0,
    0.1,
    1.5,
    1e-40,
    1e-50,
    3.4028235e38,
    3.5e38,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    np.int64(-5),
    np.int32(7),
    np.uint64(2**64 - 1),
    np.float32(0.1),
    np.float64(0.1),
    np.float16(2.5),
    np.bool_(True),
    [3],
    np.array([4.25]),
    {"out": 5},
    "7",
    None,
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("type_name", ["int64_t", "int32_t", "float", "double"])
@pytest.mark.parametrize("shape", [(1,), ()])
def test_scalar_encoders_match_the_general_path(fmt, type_name, shape):
    spec = TensorSpec("out", type_name, shape)
    codec = get_codec(fmt)
    encode = codec.reply_template([spec]).scalar_encoder(b"<>")
    for answer in SCALAR_ANSWERS:
        try:
            with np.errstate(invalid="ignore"):
                expected: Optional[bytes] = codec.encode_reply(
                    [spec], output_arrays([spec], answer)
                )
        except Exception:  # noqa: BLE001 - the general path refuses it
            expected = None
        got = encode(answer)
        if got is not None:  # what it encodes, it encodes like the general path
            assert got == b"<>" + expected, answer
    # ... and it does encode the usual answers.
    usual = (0.1, -0.0, float("nan"), np.float32(2.5)) if spec.dtype.kind == "f" else (3, -2)
    assert all(encode(x) is not None for x in usual + (np.array(usual[:1])[0],))


def test_no_scalar_encoder_for_other_outputs():
    for fmt in FORMATS:
        codec = get_codec(fmt)
        for specs in (
            [TensorSpec("a", "int64_t", (2,))],
            [TensorSpec("a", "uint8_t", (1,))],
            [TensorSpec("a", "int64_t", (1,)), TensorSpec("b", "int64_t", (1,))],
        ):
            assert codec.reply_template(specs).scalar_encoder() is None


# --- 4. frames read in place = read_frame ---------------------------------------


def _pipe_reader(data: bytes, blocking: bool = True) -> FdReader:
    """An FdReader over a pipe that carries ``data`` then ends (data written
    by a thread, in pieces, when it does not fit the pipe buffer)."""
    rfd, wfd = os.pipe()

    def feed() -> None:
        with os.fdopen(wfd, "wb", buffering=0) as out:
            for start in range(0, len(data), 7919):
                out.write(data[start : start + 7919])

    threading.Thread(target=feed, daemon=True).start()
    return FdReader(rfd, timeout=None if blocking else 5)


def _frames_of(read: Callable[[], Tuple[int, Any]]) -> List[Any]:
    out: List[Any] = []
    while True:
        try:
            kind, payload = read()
        except EndOfStream:
            return out
        except MlbridgeError as err:
            return out + [(type(err), str(err))]
        out.append((int(kind), bytes(payload)))


BAD_STREAMS = [
    b"\x01\x00\x00",
    struct.pack("<II", 5, 3) + b"abc",
    struct.pack("<II", 0, 0),
    struct.pack("<II", 2, 5) + b"ab",
    struct.pack("<II", 0xFFFFFFFF, 2),
    struct.pack("<II", 17, 1) + b"x" * 17,
    struct.pack("<II", 16, 1) + b"x" * 16 + struct.pack("<II", 3, 9),
]


@pytest.mark.parametrize("blocking", [True, False])
def test_frames_read_in_place_match_read_frame(blocking):
    streams = [(golden.GOLDEN / "frames.bin").read_bytes()] + BAD_STREAMS
    big = os.urandom(300000)
    streams.append(encode_frame(CONTEXT, b"f") + encode_frame(OBSERVATION, big) * 3)
    for data in streams:
        expected = _frames_of(lambda s=io.BytesIO(data): read_frame(s, 1 << 20))
        reader = _pipe_reader(data, blocking)
        try:
            assert _frames_of(lambda: reader.read_frame(1 << 20)) == expected
        finally:
            os.close(reader.fd)
    assert expected[-1] == (OBSERVATION, big)


def test_a_held_payload_view_does_not_stop_the_buffer_from_growing():
    small, big = b"s" * 10, os.urandom(200000)
    reader = _pipe_reader(encode_frame(CONTEXT, small) + encode_frame(OBSERVATION, big))
    try:
        kind, first = reader.read_frame(1 << 20)
        assert (kind, bytes(first)) == (CONTEXT, small)
        kind, second = reader.read_frame(1 << 20)  # grows the buffer while `first` lives
        assert (kind, bytes(second)) == (OBSERVATION, big)
        assert len(first) == 10
    finally:
        os.close(reader.fd)


# --- 5. the extended loop ---------------------------------------------------------


def _session(fmt: str, outputs: List[TensorSpec], frames: List[Tuple[int, bytes]]) -> bytes:
    data = io.BytesIO()
    data.write(handshake(fmt, outputs=[s.to_json() for s in outputs]))
    for kind, payload in frames:
        write_frame(data, kind, payload)
    return data.getvalue()


def _replies(written: bytes) -> List[Tuple[int, bytes]]:
    stream = io.BytesIO(written)
    assert stream.readline() == b'{"mlbridge":1}\n'
    return _frames_of(lambda: read_frame(stream))


def _request(fmt: str, i: int) -> bytes:
    values = {"n": np.array([i], np.int64), "m": np.full((2, 2), i / 4, np.float32)}
    return get_codec(fmt).encode_request(i, pipe.FEATURES, values)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("type_name", ["int64_t", "int32_t", "float", "double"])
@pytest.mark.parametrize("with_log", [False, True])
def test_extended_scalar_replies_and_bad_answers(fmt, type_name, with_log):
    outputs = [TensorSpec("a", type_name, (1,))]
    # 16777217 for a float output: refused (float32 cannot hold it) with or
    # without a log; bitstream without a log used to round it.
    answers = [3, 2.5, np.float32(0.1), 2**70, "x", [1, 2], float("nan"), {"a": 4}, 1e39]
    answers += [16777217, np.int64(-5), True]
    frames = [(CONTEXT, b"fn")] + [(OBSERVATION, _request(fmt, i)) for i in range(len(answers))]
    log = io.BytesIO() if with_log else None
    stats, written = serve_bytes(
        _session(fmt, outputs, frames), lambda f: answers[int(f["n"][0])], log=log
    )
    codec = get_codec(fmt)
    expected = []
    for answer in answers:  # what the general path answers
        try:
            expected.append((RESULT, codec.encode_reply(outputs, output_arrays(outputs, answer))))
        except Exception as err:  # noqa: BLE001
            expected.append((ERROR, f"{type(err).__name__}: {err}".encode()))
    assert _replies(written) == expected
    assert stats.decisions == sum(kind == RESULT for kind, _ in expected)
    assert stats.errors_reported == len(answers) - stats.decisions


def test_extended_protocol_errors_are_unchanged():
    request = _request("json", 0)
    cases = [
        ([(RESULT, b"")], ProtocolError, "unexpected RESULT frame from the compiler"),
        ([(ERROR, b"x")], ProtocolError, "unexpected ERROR frame from the compiler"),
    ]
    for frames, error, message in cases:
        with pytest.raises(error, match=message):
            serve_bytes(_session("json", pipe_outputs(), frames), lambda f: 0)
    head = _session("json", pipe_outputs(), [])
    for tail, message in [
        (struct.pack("<II", 9, 7), "unknown frame kind 7"),
        (struct.pack("<II", 1 << 20, 2), "OBSERVATION frame claims 1048576 bytes, more than"),
        (encode_frame(OBSERVATION, request)[:-3], "truncated OBSERVATION frame payload"),
        (b"\x05\x00", "truncated frame header: stream ended after 2 of 8 bytes"),
    ]:
        with pytest.raises(FrameError, match=message):
            serve_bytes(head + tail, lambda f: 0, max_bytes=1 << 16)


def pipe_outputs() -> List[TensorSpec]:
    return [TensorSpec("a", "int64_t", (1,))]


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_output_name_without_an_encoding_is_reported_per_reply(fmt):
    """No reply template (a lone surrogate in the name): every reply goes
    through encode_reply, which fails for the formats that write names, as
    it did before templates; serving goes on."""
    outputs = [TensorSpec("a\ud800", "int64_t", (1,))]
    frames = [(OBSERVATION, _request(fmt, i)) for i in range(2)]
    hello = handshake(fmt, outputs=[s.to_json() for s in outputs])
    data = io.BytesIO()
    for kind, payload in frames:
        write_frame(data, kind, payload)
    stats, written = serve_bytes(hello + data.getvalue(), lambda f: 1)
    replies = _replies(written)
    if fmt == "bitstream":
        assert replies == [(RESULT, struct.pack("<q", 1))] * 2
    else:
        assert [kind for kind, _ in replies] == [ERROR, ERROR]
        assert all(payload.startswith(b"UnicodeEncodeError: ") for _, payload in replies)
    assert stats.errors_reported == (0 if fmt == "bitstream" else 2)

"""Hostile input from peers: every decoder raises mlbridge errors only (issue 11).

Reproducers of what used to escape (RecursionError, MemoryError, numpy and
decimal errors, multi-GiB allocations, duplicate names silently accepted),
then a deterministic fuzz of every decoder with mutations of tests/golden.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pytest
import test_golden as golden
import test_malformed as malformed
import test_pipe_host as pipe
from tensor_cases import ALL_DTYPE_SPECS, random_values

from mlbridge import jsontext
from mlbridge.channel import FdReader, HostEnds
from mlbridge.codecs import FORMATS, get_codec, json_codec
from mlbridge.codecs.schema import SchemaMatcher, arrays_for
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, EndOfStream, MlbridgeError, TrainingLogError
from mlbridge.framing import CONTEXT, ERROR, OBSERVATION, RESULT, read_frame, write_frame
from mlbridge.jsontext import MAX_JSON_DEPTH, load_json
from mlbridge.limits import DEFAULT_MAX_BYTES
from mlbridge.pipe_host import HostStats, PipeHost, ProtocolError
from mlbridge.policy import Session
from mlbridge.tensor_spec import (
    MAX_ELEMENTS,
    MAX_RANK,
    SpecError,
    TensorSpec,
    check_unique_names,
    specs_from_json,
)
from mlbridge.training_log import TrainingLogReader, TrainingLogWriter, read_training_log

DEEP = b"[" * 100000
HUGE_FEATURE = {"name": "huge", "type": "uint64_t", "shape": [1 << 28]}  # 2 GiB
OUTPUTS = [TensorSpec("a", "int64_t", (1,))]


class _Refused(MlbridgeError):
    """A caller's own error class, for load_json and check_unique_names."""


def handshake(
    fmt: str = "json", features: Optional[List[Any]] = None, outputs: Optional[List[Any]] = None
) -> bytes:
    """An extended-mode handshake line (pipe.FEATURES and OUTPUTS by default)."""
    hello = {
        "mlbridge": 1,
        "format": fmt,
        "features": [s.to_json() for s in pipe.FEATURES] if features is None else features,
        "outputs": [s.to_json() for s in OUTPUTS] if outputs is None else outputs,
    }
    return json.dumps(hello).encode() + b"\n"


def refused_handshake(line: bytes, match: str) -> Dict[str, Any]:
    """Serve ``line`` as the handshake: ProtocolError matching ``match``, and
    the compiler got a refusal; returns that refusal."""
    answer = []

    def script(inp, out):
        out.write(line)
        out.flush()
        answer.append(inp.readline())

    with pytest.raises(ProtocolError, match=match):
        pipe._serve(script, lambda f: 0)
    reply = json.loads(answer[0])
    assert reply["mlbridge"] == 1 and reply["error"]
    return reply


def serve_bytes(data: bytes, policy: Callable[..., Any], **options: Any) -> Tuple[HostStats, bytes]:
    """Serve the compiler's bytes ``data`` (then EOF) in-process, without
    FIFOs; (stats, what the host wrote)."""
    rfd, wfd = os.pipe()
    with os.fdopen(wfd, "wb") as out:
        if len(data) < 60000:  # fits the pipe buffer
            out.write(data)
        else:
            threading.Thread(target=_write_and_close, args=(os.dup(wfd), data), daemon=True).start()
    try:
        written = io.BytesIO()
        stats = PipeHost(policy, **options).serve_ends(HostEnds(written, FdReader(rfd)))
        return stats, written.getvalue()
    finally:
        os.close(rfd)


def _write_and_close(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd`` (blocking; stops when the reader closes), close it."""
    with os.fdopen(fd, "wb") as out:
        try:
            out.write(data)
        except BrokenPipeError:
            pass


def in_subprocess(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (a crash must not take pytest down)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.path.dirname(__file__),
    )


# --- 1. the pipe host checks declared sizes before allocating -----------------


@pytest.mark.parametrize("shape", [[1 << 28], [1 << 40], [1 << 20, 1 << 20]])
def test_extended_handshake_refuses_a_feature_over_the_message_limit(shape):
    line = handshake(features=[{**HUGE_FEATURE, "shape": shape}])
    assert len(line) < 200
    start = time.perf_counter()
    reply = refused_handshake(line, "tensor 'huge' declares .* bytes")
    assert "tensor 'huge'" in reply["error"] and "message limit" in reply["error"]
    assert time.perf_counter() - start < 5  # nothing was zero-filled


def test_extended_handshake_checks_outputs_and_the_total():
    reply = refused_handshake(handshake(outputs=[HUGE_FEATURE]), "outputs: tensor 'huge'")
    assert "outputs" in reply["error"]
    half = {"type": "uint8_t", "shape": [DEFAULT_MAX_BYTES // 2 + 1]}
    refused_handshake(
        handshake(features=[{"name": "x", **half}, {"name": "y", **half}]),
        "the 2 tensors declare .* together",
    )


def test_mlgo_header_uses_the_same_size_check():
    header = json.dumps({"features": [HUGE_FEATURE], "advice": pipe.ADVICE.to_json()})
    with pytest.raises(ProtocolError, match="mlgo header: features: tensor 'huge' declares"):
        serve_bytes(header.encode() + b"\n", lambda f: 0)
    header = json.dumps(
        {
            "features": [s.to_json() for s in pipe.FEATURES],
            "advice": {**HUGE_FEATURE, "name": "decision"},
        }
    )
    with pytest.raises(ProtocolError, match="outputs: tensor 'decision' declares"):
        serve_bytes(header.encode() + b"\n", lambda f: 0)
    # The newline closing each record counts: 15 feature bytes + 1 fit 16, not 15.
    header = (
        json.dumps(
            {
                "features": [{"name": "x", "type": "uint8_t", "shape": [15]}],
                "advice": pipe.ADVICE.to_json(),
            }
        ).encode()
        + b"\n"
    )
    assert serve_bytes(header, lambda f: 0, max_bytes=16)[0].mode == "mlgo"
    with pytest.raises(ProtocolError, match="16 bytes together"):
        serve_bytes(header, lambda f: 0, max_bytes=15)


# --- 2. training logs ------------------------------------------------------------

LOG_HEADER = golden.golden(golden.CASES[0], "log.bin").split(b"\n", 1)[0] + b"\n"


def log_header(features: List[Any], **extra: Any) -> bytes:
    return json.dumps({"features": features, **extra}).encode() + b"\n"


@pytest.mark.parametrize(
    "data, message",
    [
        (DEEP + b"\n", "bad header line .* nested deeper than 512 levels"),
        (
            LOG_HEADER + b'{"context":"c"}\n' + DEEP + b"\n",
            "line 3: bad event line .* nested deeper than 512 levels",
        ),
        (
            log_header([{"name": "x", "type": "float", "shape": [0, 10**30]}]),
            f"dimension {10**30} is larger than {MAX_ELEMENTS}",
        ),
        (
            log_header([{"name": "x", "type": "float", "shape": [0, True]}]),
            "dimension True is not an integer",
        ),
        (
            log_header([{"name": "x", "type": "float", "shape": [1.5]}]),
            "dimension 1.5 is not an integer",
        ),
        (
            log_header([{"name": "x", "type": "float", "shape": [1] * (MAX_RANK + 1)}]),
            "33 dimensions",
        ),
        (
            log_header(
                [
                    {"name": "x", "type": "float", "shape": [1]},
                    {"name": "x", "type": "int64_t", "shape": [2]},
                ]
            ),
            "features: tensor 'x' is declared twice",
        ),
        (log_header([HUGE_FEATURE]), "features: tensor 'huge' declares 2147483648 bytes"),
        (log_header([], score=HUGE_FEATURE), "score: tensor 'huge' declares"),
        (log_header({"name": "x"}), "features must be a list of tensor specs, got dict"),
        (log_header([{"name": 5, "type": "float", "shape": [1]}]), r"features\[0\]: tensor name"),
        (b'{"features":[]}\n{"context":"\xff"}\n', "invalid JSON"),
    ],
    ids=[
        "deep header",
        "deep event",
        "huge dimension",
        "bool dimension",
        "float dimension",
        "rank",
        "duplicate",
        "over budget",
        "score over budget",
        "not a list",
        "name not str",
        "not UTF-8",
    ],
)
def test_training_log_reader_errors(data, message):
    with pytest.raises(TrainingLogError, match=message):
        list(read_training_log(io.BytesIO(data)))


def test_training_log_record_budget_is_checked_before_reading():
    specs = [TensorSpec("x", "float", (4,)), TensorSpec("y", "uint8_t", (15,))]
    out = io.BytesIO()
    writer = TrainingLogWriter(out, specs)
    writer.context("c")
    writer.observation(random_values(specs, 1))
    data = out.getvalue()
    assert len(list(TrainingLogReader(io.BytesIO(data), max_record_bytes=32))) == 1
    stream = malformed.Recorder(data)
    with pytest.raises(
        TrainingLogError,
        match="the 2 tensors declare 32 bytes together, more than the message limit of 31 bytes",
    ):
        TrainingLogReader(stream, max_record_bytes=31)
    assert stream.requests == [] and stream.tell() == data.index(b"\n") + 1  # the header only


def test_training_log_writer_refuses_duplicate_names():
    with pytest.raises(TrainingLogError, match="tensor 'x' is declared twice"):
        TrainingLogWriter(io.BytesIO(), [TensorSpec("x", "float"), TensorSpec("x", "float")])


# --- 3. the pipe host: deep lines, duplicate names, undecodable requests --------


@pytest.mark.parametrize(
    "data, message",
    [
        (DEEP + b"\n", "bad header line .* nested deeper than 512 levels"),
        (pipe._mlgo_header() + DEEP[:50000] + b"\n", "bad event line .* nested deeper"),
        (b"\xff\xfe\n", "bad header line .* invalid JSON"),
        (pipe._mlgo_header().replace(b'"m"', b'"n"'), "features: tensor 'n' is declared twice"),
    ],
    ids=["deep header", "deep event", "not UTF-8", "duplicate"],
)
def test_host_bad_lines(data, message):
    with pytest.raises(ProtocolError, match=message):
        serve_bytes(data, lambda f: 0)


@pytest.mark.parametrize("key", ["features", "outputs"])
def test_extended_handshake_refuses_duplicate_names(key):
    specs = [{"name": "x", "type": "float", "shape": [1]}] * 2
    reply = refused_handshake(handshake(**{key: specs}), f"{key}: tensor 'x' is declared twice")
    assert "declared twice" in reply["error"]


def test_extended_handshake_refusal_fits_the_reply_line():
    name = "\u00e9" * 100000  # 600 kB as an escaped JSON string
    reply = refused_handshake(
        handshake(features=[{"name": name, "type": "f", "shape": []}]), "unknown type"
    )
    assert len(json.dumps(reply)) < 64 << 10


def test_extended_handshake_refuses_bad_spec_lists():
    refused_handshake(handshake(features={"a": 1}), "features must be a list")
    refused_handshake(
        handshake(features=[{"name": "x", "type": "float", "shape": [-1]}]),
        r"features\[0\]: tensor 'x': negative dimension -1",
    )


def _bad_requests(fmt: str) -> List[bytes]:
    """Requests for pipe.FEATURES that the decoder refuses; the last json and
    protobuf ones only after writing one tensor into the session's buffer."""
    good = {"n": np.array([7], np.int64), "m": np.full((2, 2), 0.5, np.float32)}
    valid = get_codec(fmt).encode_request(5, pipe.FEATURES, good)
    common = [b"", valid[:-1], valid + b"\x00", bytes(range(256))]
    if fmt == "json":
        return common + [
            DEEP,
            b'{"observation":1}',
            valid.replace(b"[2,2]", b"[5]"),
            b'{"observation":1,"tensors":[{"name":"n","type":"int64_t",'
            b'"shape":[1],"data":[3]},{"name":"m","type":"float",'
            b'"shape":[2,2],"data":[1,2,3,"x"]}]}',
        ]
    if fmt == "protobuf":
        # "n" is copied into the buffer, then "m" has a wrong size.
        return common + [
            malformed.pb_reply(("n", 9, [1], bytes(8)), ("m", 1, [2, 2], bytes(3)), observation=1)
        ]
    return common


@pytest.mark.parametrize("fmt", FORMATS)
def test_undecodable_request_gets_an_error_frame_and_serving_goes_on(fmt):
    codec = get_codec(fmt)
    bad = _bad_requests(fmt)
    got, seen = [], []
    log = io.BytesIO()

    def script(inp, out):
        out.write(handshake(fmt))
        out.flush()
        assert inp.readline() == b'{"mlbridge":1}\n'
        write_frame(out, CONTEXT, b"fn")
        for i, payload in enumerate([None] + bad + [None]):
            if payload is None:  # a good request
                payload = codec.encode_request(
                    i,
                    pipe.FEATURES,
                    {"n": np.array([i], np.int64), "m": np.full((2, 2), i, np.float32)},
                )
            write_frame(out, OBSERVATION, payload)
            got.append(read_frame(inp))

    def policy(features):
        seen.append((int(features["n"][0]), features["m"].tolist()))
        return {"a": int(features["n"][0]) + 100}

    stats = pipe._serve(script, policy, log=log)
    last = len(bad) + 1
    assert [kind for kind, _ in got] == [RESULT] + [ERROR] * len(bad) + [RESULT]
    for _, message in got[1:-1]:
        assert message.startswith(f"malformed request: {fmt} request: ".encode()), message
    assert int(codec.decode_reply(got[-1][1], OUTPUTS)["a"][0]) == last + 100
    assert seen == [(0, [[0.0, 0.0], [0.0, 0.0]]), (last, [[last] * 2] * 2)]
    assert (stats.decisions, stats.errors_reported) == (2, len(bad))
    log.seek(0)
    records = list(read_training_log(log))
    assert [int(r.tensors["n"][0]) for r in records] == [0, last]
    assert records[1].tensors["m"].tolist() == [[last] * 2] * 2


# --- 4. the json codec -------------------------------------------------------------

TIE = "1.000000059604644775390625"  # the float64 midpoint between float32 1 and 1 + 2**-23


@pytest.mark.parametrize(
    "other, expected",
    [
        ("1e99999999999999999999", np.inf),  # decimal cannot represent the exponent
        ("-1.0e-99999999999999999999", -0.0),
    ],
)
def test_json_float32_tie_next_to_an_overlong_exponent(other, expected):
    specs = [TensorSpec("x", "float", (2,))]
    payload = malformed.json_reply(malformed.tensor("x", data=(0, 0)))
    payload = payload.replace(b"0, 0", f"{TIE}, {other}".encode())
    out = get_codec("json").decode_reply(payload, specs)["x"]
    assert out[0] == np.float32(1.0) and out[1] == expected
    assert np.signbit(out[1]) == np.signbit(expected)


def test_json_float32_tie_with_a_million_digits_is_fast():
    specs = [TensorSpec("x", "float", (1,))]
    above = TIE + "0" * 1000000 + "1"
    payload = malformed.json_reply(malformed.tensor("x", shape=(1,), data=(0,)))
    start = time.perf_counter()
    out = get_codec("json").decode_reply(payload.replace(b"[0]", f"[{above}]".encode()), specs)
    assert out["x"][0] == np.float32(1 + 2**-23)
    assert time.perf_counter() - start < 10  # the exact Fraction took minutes


def test_json_exact_value_of_an_unrepresentable_number_is_a_codec_error():
    # Unreachable from a tie (its value is near 1), kept as the last guard.
    with pytest.raises(CodecError, match="w: the number 1e99999999999999999999 cannot"):
        json_codec._exact("1e99999999999999999999", "w")


@pytest.mark.parametrize(
    "nested",
    [
        DEEP,
        b'{"tensors":[' + b"[" * 600 + b"]" * 600 + b"]}",
        b'{"tensors":' + b'{"a":' * 600 + b"1" + b"}" * 601,
    ],
    ids=["lists", "balanced lists", "objects"],
)
def test_deep_nesting_in_payloads(nested):
    codec = get_codec("json")
    for decode in (
        lambda p: codec.decode_reply(p, malformed.SPECS),
        lambda p: codec.decode_request(p, malformed.SPECS),
        lambda p: codec.decode_request(p, malformed.SPECS, into=TensorBuffer(malformed.SPECS)),
    ):
        with pytest.raises(CodecError, match="nested deeper than 512 levels"):
            decode(nested)


def test_deep_json_does_not_crash_with_a_raised_recursion_limit():
    # CPython's parser recurses in C: with a high recursion limit, 100k '['
    # overflowed the C stack (SIGSEGV) instead of raising.
    result = in_subprocess(
        "import sys\n"
        "from mlbridge.codecs import get_codec\n"
        "from mlbridge.errors import CodecError\n"
        "from mlbridge.tensor_spec import TensorSpec\n"
        "sys.setrecursionlimit(10 ** 7)\n"
        "try:\n"
        "    get_codec('json').decode_reply(b'[' * 1000000, [TensorSpec('a', 'float')])\n"
        "except CodecError as err:\n"
        "    print(err)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "nested deeper than 512 levels" in result.stdout


# --- 5. load_json: one parser for untrusted JSON -----------------------------------


@pytest.mark.parametrize(
    "data, message",
    [
        (b"{", "invalid JSON: Expecting property name"),
        (b"\xff{}", "invalid JSON"),
        (b'{"a":' + b"9" * 5000 + b"}", "invalid JSON"),  # Python's int digit limit
        (b"[1]", "expected a JSON object, got list"),
        (b"null", "expected a JSON object, got NoneType"),
        (
            b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
            "invalid JSON: nested deeper than 512",
        ),
        (
            '{"a":'.encode("utf-16-le") + "[".encode("utf-16-le") * 600,
            "invalid JSON: nested deeper than 512",
        ),
    ],
    ids=["truncated", "not UTF-8", "long integer", "list", "null", "deep", "deep UTF-16"],
)
def test_load_json_raises_the_given_error_only(data, message):
    with pytest.raises(_Refused, match=f"^the text: {message}"):
        load_json(data, "the text", _Refused)


def test_load_json_depth_limit_is_exact_and_ignores_strings():
    def nested(depth: int) -> bytes:  # an object holding depth - 1 nested lists
        return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"

    assert load_json(nested(MAX_JSON_DEPTH), "x")["a"]
    with pytest.raises(CodecError, match="nested deeper"):
        load_json(nested(MAX_JSON_DEPTH + 1), "x")
    for text in [
        '{"a":"%s"}' % ("[" * 5000),
        '{"a":"%s","b":[1]}' % ("]" * 5000),
        '{"a\\\\":"\\"[[[[\\\\","b":[[%s]]}' % ",".join(["[]"] * 3000),
        '{"\\u005b":"%s"}' % ("{" * 600),
    ]:
        assert isinstance(load_json(text.encode(), "x"), dict), text[:40]
        assert isinstance(load_json(text.encode("utf-16"), "x"), dict), text[:40]


@pytest.mark.parametrize("chunk", [1 << 20, 7])
def test_nesting_depth_is_the_parsers_depth_on_valid_documents(monkeypatch, chunk):
    monkeypatch.setattr(jsontext, "_DEPTH_CHUNK", chunk)  # 7: state carried across chunks
    rng = np.random.default_rng(11)
    pieces = ['"', "\\", "[", "]", "{", "}", "a", "é", "\n"]

    def value(depth: int) -> Any:
        kind = rng.integers(0, 4)
        if depth > 8 or kind == 0:
            return "".join(rng.choice(pieces, rng.integers(0, 6)))
        if kind == 1:
            return [value(depth + 1) for _ in range(rng.integers(0, 3))]
        if kind == 2:
            return {
                "".join(rng.choice(pieces, 3)): value(depth + 1) for _ in range(rng.integers(0, 3))
            }
        return int(rng.integers(-5, 5))

    def depth_of(obj: Any) -> int:
        if isinstance(obj, list):
            return 1 + max(map(depth_of, obj), default=0)
        if isinstance(obj, dict):
            return 1 + max(map(depth_of, obj.values()), default=0)
        return 0

    for _ in range(300):
        obj = {"k": value(0)}
        for ensure_ascii in (True, False):
            text = json.dumps(obj, ensure_ascii=ensure_ascii).encode()
            assert jsontext._nesting_depth(text, 10**6) == depth_of(obj), text


# --- 6. specs: bounded dimensions, integer types, unique names ------------------


@pytest.mark.parametrize(
    "shape, message",
    [
        ((0, 10**30), "dimension 1000000000000000000000000000000 is larger than"),
        ((MAX_ELEMENTS + 1, 0), "is larger than"),
        ((True,), "dimension True is not an integer"),
        ((np.bool_(True),), "is not an integer"),
        ((2.0,), "dimension 2.0 is not an integer"),
        (("3",), "dimension '3' is not an integer"),
        ((None,), "dimension None is not an integer"),
        (5, "shape 5 is not a sequence of integers"),
        ((-1, 0), "negative dimension -1"),
        ((1 << 21, 1 << 20), "is too large"),
        ((1,) * (MAX_RANK + 1), "33 dimensions"),
    ],
)
def test_tensor_spec_bounds_every_dimension(shape, message):
    with pytest.raises(SpecError, match=message):
        TensorSpec("t", "float", shape)


def test_tensor_spec_types_of_name_type_and_port():
    for bad in [
        dict(name=5),
        dict(name=""),
        dict(type_name=["float"]),
        dict(type_name="f16"),
        dict(port=True),
        dict(port=1.0),
        dict(port=1 << 31),
        dict(port="0"),
    ]:
        args = {"name": "t", "type_name": "float", **bad}
        with pytest.raises(SpecError):
            TensorSpec(**args)
    spec = TensorSpec("t", "float", (np.int64(2), np.uint8(3)), np.int32(-4))
    assert spec.shape == (2, 3) and type(spec.shape[0]) is int and spec.port == -4
    assert TensorSpec("t", "float", [0, MAX_ELEMENTS]).element_count == 0


def test_tensor_spec_from_json_errors_are_bounded():
    with pytest.raises(SpecError, match=r"lacks key 'name'") as info:
        TensorSpec.from_json({"type": "float", "shape": [1], "pad": "x" * 100000})
    assert len(str(info.value)) < 200
    with pytest.raises(SpecError, match="must be a JSON object, got list"):
        TensorSpec.from_json([1])
    with pytest.raises(SpecError, match="shape must be a list"):
        TensorSpec.from_json({"name": "x", "type": "float", "shape": 3})


def test_check_unique_names_and_specs_from_json():
    specs = [TensorSpec("a", "float"), TensorSpec("b", "float"), TensorSpec("a", "int8_t")]
    check_unique_names(specs[:2], "x")
    with pytest.raises(SpecError, match="^inputs: tensor 'a' is declared twice$"):
        check_unique_names(specs, "inputs")
    with pytest.raises(_Refused, match="tensor 'a'"):
        check_unique_names(specs, "inputs", _Refused)
    assert specs_from_json([s.to_json() for s in specs[:2]], "f") == specs[:2]
    with pytest.raises(SpecError, match=r"^f\[1\]: tensor spec must be a JSON object"):
        specs_from_json([specs[0].to_json(), "b"], "f")
    with pytest.raises(SpecError, match="f: tensor 'a' is declared twice"):
        specs_from_json([s.to_json() for s in specs], "f")


@pytest.mark.parametrize("fmt", FORMATS)
def test_codecs_refuse_duplicate_declared_names(fmt):
    codec = get_codec(fmt)
    specs = [malformed.SPECS[0], malformed.SPECS[0]]
    payload = (
        bytes(16)
        if fmt == "bitstream"
        else codec.encode_reply(malformed.SPECS[:1], {"a": malformed.VALUES["a"]})
    )
    with pytest.raises(CodecError, match="tensor 'a' is declared twice"):
        codec.decode_reply(payload, specs)
    with pytest.raises(CodecError, match="tensor 'a' is declared twice"):
        codec.encode_reply(specs, {"a": malformed.VALUES["a"]})  # was an IndexError
    with pytest.raises(CodecError, match="tensor 'a' is declared twice"):
        TensorBuffer(specs)


def test_schema_matcher_and_arrays_for_check_names_once():
    with pytest.raises(CodecError, match="^m: tensor 't_float' is declared twice"):
        SchemaMatcher(ALL_DTYPE_SPECS + ALL_DTYPE_SPECS[:1], "m")
    values = random_values(ALL_DTYPE_SPECS, 3)
    assert len(arrays_for(ALL_DTYPE_SPECS, values, "w")) == len(ALL_DTYPE_SPECS)


# --- fuzz: mutations of the golden vectors reach only mlbridge errors -----------


def _mutations(data: bytes, count: int, seed: int) -> List[bytes]:
    """``count`` deterministic mutations of ``data``: byte flips, insertions,
    deletions, truncations, repeated or spliced chunks, interesting values."""
    rng = np.random.default_rng(seed)
    specials = [
        b"\x00",
        b"\xff",
        b"[",
        b"{",
        b"]",
        b'"',
        b"\\",
        b"\n",
        b"-",
        b"e",
        b"9" * 30,
        b"\xff\xff\xff\xff\x0f",
        b"1e99999999999999999999",
        b"-0",
        b"NaN",
        b"\xed\xa0\x80",
    ]
    out = []
    for _ in range(count):
        buf = bytearray(data)
        for _ in range(int(rng.integers(1, 5))):
            pos = int(rng.integers(0, len(buf) + 1))
            op = int(rng.integers(0, 6))
            if op == 0 and buf:
                buf[min(pos, len(buf) - 1)] = int(rng.integers(0, 256))
            elif op == 1:
                buf[pos:pos] = specials[int(rng.integers(0, len(specials)))]
            elif op == 2:
                del buf[pos : pos + int(rng.integers(1, 16))]
            elif op == 3:
                del buf[pos:]
            elif op == 4:
                end = min(len(buf), pos + int(rng.integers(1, 64)))
                buf[pos:pos] = buf[pos:end] * int(rng.integers(1, 4))
            else:
                start = int(rng.integers(0, len(data) + 1))
                buf[pos:pos] = data[start : start + int(rng.integers(1, 32))]
        out.append(bytes(buf))
    return out


def _only_mlbridge_errors(call: Callable[[bytes], Any], inputs: List[bytes]) -> int:
    """Call ``call`` on every input; any exception but MlbridgeError fails the
    test (naming the input). Returns how many inputs were refused."""
    refused = 0
    for data in inputs:
        try:
            call(data)
        except MlbridgeError:
            refused += 1
        except Exception as err:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{type(err).__name__}: {err} on input {data[:200]!r}")
    return refused


@pytest.mark.parametrize("fmt", FORMATS)
def test_fuzz_codecs(fmt):
    codec = get_codec(fmt)
    refused = total = 0
    for seed, case in enumerate(golden.CASES):
        specs = golden.specs_of(case)
        buffer = TensorBuffer(specs)
        request = golden.golden(case, f"{fmt}.bin")
        reply = golden.golden(case, "bitstream.bin" if fmt == "bitstream" else f"reply.{fmt}.bin")
        inputs = _mutations(request, 120, seed)
        refused += _only_mlbridge_errors(lambda p: codec.decode_request(p, specs), inputs)
        refused += _only_mlbridge_errors(
            lambda p: codec.decode_request(p, specs, into=buffer), inputs
        )
        refused += _only_mlbridge_errors(
            lambda p: codec.decode_reply(p, specs), _mutations(reply, 120, seed + 100)
        )
        total += 360
    assert refused > total // 4  # the mutations do hit the checks


def test_fuzz_read_frame():
    data = (golden.GOLDEN / "frames.bin").read_bytes()

    def read_all(stream: bytes) -> None:
        source = io.BytesIO(stream)
        for _ in range(len(stream) + 1):
            try:
                read_frame(source, max_bytes=1 << 16)
            except EndOfStream:
                return

    assert _only_mlbridge_errors(read_all, _mutations(data, 2000, 1)) > 500


def test_fuzz_training_log_reader():
    refused = 0
    for seed, case in enumerate(golden.CASES):
        inputs = _mutations(golden.golden(case, "log.bin"), 250, seed)
        refused += _only_mlbridge_errors(lambda d: list(read_training_log(io.BytesIO(d))), inputs)
    assert refused > 500


class _Zeros:
    """A policy answering zeros for whatever outputs the session declares."""

    def begin(self, session: Session) -> None:
        self.outputs = session.outputs

    def __call__(self, features: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return {s.name: np.zeros(s.shape, s.dtype) for s in self.outputs}


def _compiler_streams() -> List[bytes]:
    """What a compiler sends for each golden case: an mlgo session and an
    extended session per format (header/handshake, context, one request)."""
    streams = []
    for case in golden.CASES:
        specs, values = golden.specs_of(case), golden.tensors_of(case)
        features = [s.to_json() for s in specs]
        advice = pipe.ADVICE.to_json()
        raw = golden.golden(case, "bitstream.bin")
        streams.append(
            json.dumps({"features": features, "advice": advice}).encode()
            + b'\n{"context":"c"}\n{"observation":0}\n'
            + raw
            + b"\n"
        )
        for fmt in FORMATS:
            frames = io.BytesIO()
            write_frame(frames, CONTEXT, b"c")
            write_frame(frames, OBSERVATION, get_codec(fmt).encode_request(0, specs, values))
            streams.append(handshake(fmt, features, [advice]) + frames.getvalue())
    return streams


def test_fuzz_pipe_host():
    refused = total = 0
    for seed, stream in enumerate(_compiler_streams()):
        header_end = stream.index(b"\n") + 1
        # Mostly the header line (the host's first decoding step), then the rest.
        inputs = [m + stream[header_end:] for m in _mutations(stream[:header_end], 50, seed)]
        inputs += _mutations(stream, 25, seed + 1000)
        refused += _only_mlbridge_errors(
            lambda d: serve_bytes(d, _Zeros(), max_bytes=1 << 20), inputs
        )
        total += len(inputs)
    assert refused > total // 4

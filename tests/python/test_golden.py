"""The encoders reproduce tests/golden byte for byte; the decoders read it back."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

from mlbridge.codecs import get_codec
from mlbridge.errors import EndOfStream
from mlbridge.framing import read_frame, write_frame
from mlbridge.tensor_spec import TensorSpec
from mlbridge.training_log import TrainingLogReader, TrainingLogWriter

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
CASES: List[Dict[str, Any]] = json.loads((GOLDEN / "cases.json").read_text())
REWARD = TensorSpec("reward", "float", (1,))


def specs_of(case: Dict[str, Any]) -> List[TensorSpec]:
    return [TensorSpec(t["name"], t["type"], tuple(t["shape"])) for t in case["tensors"]]


def tensors_of(case: Dict[str, Any]) -> Dict[str, np.ndarray]:
    return {
        spec.name: np.frombuffer(bytes.fromhex(t["hex"]), spec.dtype).reshape(spec.shape)
        for spec, t in zip(specs_of(case), case["tensors"])
    }


def golden(case: Dict[str, Any], suffix: str) -> bytes:
    return (GOLDEN / f"{case['name']}.{suffix}").read_bytes()


def assert_raw(case: Dict[str, Any], decoded: Dict[str, np.ndarray]) -> None:
    assert list(decoded) == [t["name"] for t in case["tensors"]]
    for t in case["tensors"]:
        assert decoded[t["name"]].tobytes().hex() == t["hex"], t["name"]


def test_cases_cover_the_contract():
    names = {case["name"] for case in CASES}
    assert {"mlgo_inliner_like", "eviction_like", "scalars", "nd_shape"} <= names
    types = {t["type"] for case in CASES for t in case["tensors"]}
    assert len(types) == 10
    inliner = next(c for c in CASES if c["name"] == "mlgo_inliner_like")
    assert len(inliner["tensors"]) == 38
    assert all(t["type"] == "int64_t" and t["shape"] == [1] for t in inliner["tensors"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_request_bytes(case, fmt):
    codec, specs = get_codec(fmt), specs_of(case)
    expected = golden(case, f"{fmt}.bin")
    assert codec.encode_request(case["observation"], specs, tensors_of(case)) == expected
    observation, decoded = codec.decode_request(expected, specs)
    assert observation == (-1 if fmt == "bitstream" else case["observation"])
    assert_raw(case, decoded)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_reply_bytes(case, fmt):
    codec, specs = get_codec(fmt), specs_of(case)
    expected = golden(case, "bitstream.bin" if fmt == "bitstream" else f"reply.{fmt}.bin")
    assert codec.encode_reply(specs, tensors_of(case)) == expected
    assert_raw(case, codec.decode_reply(expected, specs))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_training_log_bytes(case):
    expected = golden(case, "log.bin")
    reward = case.get("reward_hex")
    out = io.BytesIO()
    writer = TrainingLogWriter(out, specs_of(case), score=REWARD if reward else None)
    writer.context(case["context"])
    writer.observation(
        tensors_of(case),
        reward=np.frombuffer(bytes.fromhex(reward), np.float32) if reward else None,
    )
    assert out.getvalue() == expected
    reader = TrainingLogReader(io.BytesIO(expected))
    assert reader.features == specs_of(case)
    assert reader.score == (REWARD if reward else None)
    records = list(reader)
    assert len(records) == 1
    assert (records[0].context, records[0].observation) == (case["context"], 0)
    assert_raw(case, records[0].tensors)
    if reward:
        assert records[0].reward.tobytes().hex() == reward
    else:
        assert records[0].reward is None


def test_frames():
    described = json.loads((GOLDEN / "frames.json").read_text())
    data = (GOLDEN / "frames.bin").read_bytes()
    stream = io.BytesIO(data)
    for frame in described:
        kind, payload = read_frame(stream)
        assert (kind, kind.name) == (frame["kind"], frame["kind_name"])
        assert payload.hex() == frame["payload_hex"]
    with pytest.raises(EndOfStream):
        read_frame(stream)
    out = io.BytesIO()
    for frame in described:
        write_frame(out, frame["kind"], bytes.fromhex(frame["payload_hex"]))
    assert out.getvalue() == data


#: Golden files written by hand (a grammar's cases), not by the generator.
HANDWRITTEN = ("runner_configs.json", "run_stats.json", "plugin_description.json")


def test_generator_is_deterministic_and_matches_committed_files(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "make_golden_vectors", ROOT / "tools" / "make_golden_vectors.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    first = {p.name: p.read_bytes() for p in module.write(tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in module.write(tmp_path / "b")}
    assert first == second
    committed = {
        p.name: p.read_bytes()
        for p in GOLDEN.iterdir()
        if p.name not in ("README.md",) + HANDWRITTEN
    }
    assert sorted(first) == sorted(committed)
    for name, data in first.items():
        assert data == committed[name], name

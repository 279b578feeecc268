"""LLVM training logs: writer, reader and dump."""

from __future__ import annotations

import io

import numpy as np
import pytest

from mlbridge.errors import TrainingLogError
from mlbridge.tensor_spec import TensorSpec
from mlbridge.training_log import TrainingLogReader, TrainingLogWriter, dump, read_training_log

FEATURES = [
    TensorSpec("a", "int64_t", (3,)),
    TensorSpec("b", "float", (1,)),
    TensorSpec("bytes", "uint8_t", (2, 2)),
]
SCORE = TensorSpec("reward", "float", (1,))
ADVICE = TensorSpec("advice", "int64_t", (1,))


def write_log(score=SCORE, advice=None) -> bytes:
    out = io.BytesIO()
    writer = TrainingLogWriter(out, FEATURES, score=score, advice=advice)
    writer.context("foo")
    for i in range(3):
        writer.observation(
            {"a": [i, -i, 10], "b": [0.5 * i], "bytes": [[10, 10], [i, 10]]},
            reward=float(i) + 0.25 if score else None,
        )
    writer.context("bar")
    raw = np.array([7, 8, 9], np.int64).tobytes() + np.float32(1e-7).tobytes() + b"\n\n\n\n"
    writer.observation(raw, reward=-1.0 if score else None)
    writer.context("foo")  # as in LLVM, numbering continues per context
    writer.observation(
        {"a": [0, 0, 0], "b": [0], "bytes": [[0, 0], [0, 0]]}, reward=2 if score else None
    )
    return out.getvalue()


def test_exact_bytes_of_a_small_log():
    out = io.BytesIO()
    writer = TrainingLogWriter(
        out, [TensorSpec("x", "int8_t", (2,))], score=SCORE, advice=TensorSpec("x", "int8_t", (2,))
    )
    writer.context("f")
    assert writer.observation({"x": [10, -1]}, reward=1.5) == 0
    assert out.getvalue() == (
        b'{"features":[{"name":"x","type":"int8_t","port":0,"shape":[2]}],'
        b'"score":{"name":"reward","type":"float","port":0,"shape":[1]},'
        b'"advice":{"name":"x","type":"int8_t","port":0,"shape":[2]}}\n'
        b'{"context":"f"}\n{"observation":0}\n\n\xff\n{"outcome":0}\n\x00\x00\xc0?\n'
    )


def test_round_trip_with_newlines_inside_tensor_bytes():
    reader = TrainingLogReader(io.BytesIO(write_log(advice=ADVICE)))
    assert reader.features == FEATURES and reader.score == SCORE and reader.advice == ADVICE
    records = list(reader)
    assert [(r.context, r.observation) for r in records] == [
        ("foo", 0),
        ("foo", 1),
        ("foo", 2),
        ("bar", 0),
        ("foo", 3),
    ]
    assert records[1].tensors["a"].tolist() == [1, -1, 10]
    assert records[1].tensors["bytes"].tolist() == [[10, 10], [1, 10]]
    assert records[2].tensors["b"].dtype == np.float32 and records[2].tensors["b"][0] == 1.0
    assert records[3].tensors["bytes"].tolist() == [[10, 10], [10, 10]]
    assert records[3].tensors["b"][0] == np.float32(1e-7)
    assert [float(r.reward[0]) for r in records] == [0.25, 1.25, 2.25, -1.0, 2.0]


def test_round_trip_without_score():
    reader = TrainingLogReader(io.BytesIO(write_log(score=None)))
    assert reader.score is None and reader.advice is None
    records = list(reader)
    assert len(records) == 5 and all(r.reward is None for r in records)


def test_reward_rules():
    writer = TrainingLogWriter(io.BytesIO(), FEATURES, score=SCORE)
    with pytest.raises(TrainingLogError, match="context"):
        writer.observation({"a": [1, 2, 3], "b": [1], "bytes": [[1, 2], [3, 4]]}, reward=1.0)
    writer.context("c")
    with pytest.raises(TrainingLogError, match="reward"):
        writer.observation({"a": [1, 2, 3], "b": [1], "bytes": [[1, 2], [3, 4]]})
    with pytest.raises(TrainingLogError, match="tensor 'b' is missing"):
        writer.observation({"a": [1, 2, 3], "bytes": [[1, 2], [3, 4]]}, reward=1.0)
    with pytest.raises(TrainingLogError, match="raw observation has 3 bytes"):
        writer.observation(b"abc", reward=1.0)


@pytest.mark.parametrize("cut", [1, 60, 200, -30, -6, -5, -1])
def test_truncated_file_is_an_error(cut):
    data = write_log()
    with pytest.raises(TrainingLogError, match="truncated|newline|bad|empty"):
        list(read_training_log(io.BytesIO(data[:cut])))


def test_every_truncation_point_raises_or_reads_whole_records():
    data = write_log()
    boundaries = 0
    for cut in range(len(data)):
        try:
            list(read_training_log(io.BytesIO(data[:cut])))
            boundaries += 1  # a cut exactly between records is a valid shorter log
        except TrainingLogError:
            pass
    # after the header, the 3 context lines and each of the first 4 records
    assert boundaries == 8


@pytest.mark.parametrize(
    "bad, message",
    [
        (b"", "empty file"),
        (b"not json\n", "bad header"),
        (b'{"nofeatures":[]}\n', "bad header"),
        (b'{"features":[{"name":"x","type":"complex","shape":[1]}]}\n', "bad header"),
        (b'{"features":[]}\n{"context":"c"}\n{"bogus":1}\n', "expected a context or observation"),
        (b'{"features":[]}\n{"context":3}\n', "context must be a string"),
        (b'{"features":[]}\n{"context":"c"}\n{"observation":0}\nX', "expected a newline"),
        (b'{"features":[]}\n{"observation":0}\n\n{"outcome":0}\n', "declares no score"),
        (
            b'{"features":[],"score":{"name":"r","type":"float","shape":[1]}}\n'
            b'{"observation":0}\n\n{"outcome":1}\n',
            "outcome 1 follows observation 0",
        ),
        (
            b'{"features":[],"score":{"name":"r","type":"float","shape":[1]}}\n'
            b'{"observation":0}\n\n{"observation":1}\n',
            "expected the outcome of observation 0",
        ),
        (b'{"features":[]}\n[1]\n', "expected a JSON object, got list"),
    ],
)
def test_bad_lines(bad, message):
    with pytest.raises(TrainingLogError, match=message):
        list(read_training_log(io.BytesIO(bad)))


def test_dump_text(tmp_path):
    path = tmp_path / "log.bin"
    path.write_bytes(write_log())
    out = io.StringIO()
    assert dump(path, out) == 5
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "context=foo observation=0 a=[0 0 10] b=[0] bytes=[10 10 0 10] reward=[0.25]"
    )
    assert lines[3] == (
        "context=bar observation=0 a=[7 8 9] b=[1e-07] bytes=[10 10 10 10] reward=[-1]"
    )
    assert len(lines) == 5

"""The plugins' JSON-lines logs are read strictly: every malformed line is a
ValueError naming the file and line."""

from __future__ import annotations

import json

import pytest

from mlbridge.gcc import FEATURE_NAMES, read_decision_log
from mlbridge.mlir import read_tiling_log


def decision(**changes):
    line = {
        "function": "f",
        "file": "f.c",
        "line": 3,
        "loop": 1,
        "features": {name: 1 for name in FEATURE_NAMES},
        "factor": 4,
        "source": "model",
    }
    line.update(changes)
    return json.dumps(line)


def test_a_decision_log_reads_back(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(decision() + "\n" + decision(factor=0, source="gcc") + "\n")
    assert [d["factor"] for d in read_decision_log(log)] == [4, 0]


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "log.jsonl:2"),
        ("[1, 2]", "expected a JSON object"),
        ("[" * 10000 + "]" * 10000, "log.jsonl:2"),
        (decision(factor=None).replace('"factor": null, ', ""), "needs the keys"),
        (decision(features={"loop_depth": 1}), "features ['loop_depth']"),
        (decision(features=[1, 2]), "features"),
    ],
)
def test_malformed_lines_are_errors_naming_them(tmp_path, line, message):
    log = tmp_path / "log.jsonl"
    log.write_text(decision() + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_decision_log(log)


def test_a_tiling_log_needs_the_passs_features(tmp_path):
    log = tmp_path / "tiles.jsonl"
    log.write_text(decision() + "\n")
    with pytest.raises(ValueError, match="a nest needs the keys"):
        read_tiling_log(log)

"""The inline-advisor plugin's statistics file (mlbridge.llvm.plugin_stats),
and how the inlining environment's gRPC transport judges a compilation by it
rather than by the compiler's stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlbridge.errors import CodecError
from mlbridge.gym.modules import Module
from mlbridge.llvm.driver import RunResult
from mlbridge.llvm.plugin_stats import read_inline_stats
from mlbridge.problems.inlining.environment import InliningEnv, _Episode


def line(**counts) -> str:
    """A record of the inline advisor (mlbridge.run_stats) with ``counts``:
    the record's own keys, else details."""
    record = {"tool": "inline-advisor", "unit": "m.c", "runner": "onnx:x.onnx"}
    record.update({"decisions": 0, "answered": 0, "fallbacks": 0, "first_error": None})
    details = {"inlined": 0, "compared": 0, "agreed": 0}
    for key, value in counts.items():
        (record if key in record else details)[key] = value
    record["details"] = details
    return json.dumps(record) + "\n"


def test_records_are_summed_and_a_missing_file_is_no_module(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    assert read_inline_stats(path).modules == 0
    path.write_text(
        line(decisions=3, answered=2, inlined=1, compared=3, agreed=2, deferred=1)
        + line(after_size_stop=4)
        + line(decisions=2, fallbacks=2, first_error="runner: timed out", size_stopped=True)
    )
    stats = read_inline_stats(path)
    assert (stats.modules, stats.decisions, stats.inlined, stats.deciding) == (3, 5, 1, 2)
    assert (stats.answered, stats.fallbacks, stats.compared, stats.agreed) == (2, 2, 3, 2)
    assert (stats.deferred, stats.after_size_stop) == (1, 4)
    assert stats.first_error == "runner: timed out"


@pytest.mark.parametrize(
    "text",
    [
        "not json\n",
        "[1]\n",
        line(decisions="3"),
        line(fallbacks=True),
        '{"decisions": 1}\n',
        line(tool="phase-service"),
    ],
)
def test_a_malformed_line_is_a_codec_error_naming_it(tmp_path: Path, text: str):
    path = tmp_path / "s.jsonl"
    path.write_text(line() + text)
    with pytest.raises(CodecError, match="s.jsonl:2"):
        read_inline_stats(path)


def test_a_file_over_the_budget_is_refused(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_text(line() * 10)
    with pytest.raises(CodecError, match="larger than"):
        read_inline_stats(path, max_bytes=100)


def grpc_env() -> InliningEnv:
    env = InliningEnv.__new__(InliningEnv)  # no compiler: only the judgment
    env.transport, env.episode_timeout = "grpc", 60.0
    return env


@pytest.mark.parametrize(
    "stats, expected",
    [
        (None, "did not serve the module"),
        (line(decisions=2, fallbacks=1, first_error="grpc: deadline exceeded"), "fell back"),
        ("garbage\n", "statistics are unreadable"),
        (line(decisions=2), None),
    ],
)
def test_the_grpc_transport_judges_a_compilation_by_the_plugins_statistics(
    tmp_path: Path, stats, expected
):
    episode = _Episode(Module("m", tmp_path / "m.bc", "m", "train"), tmp_path / "episode-1.o")
    if stats is not None:
        episode.stats.write_text(stats)
    # The stderr says nothing of a fallback: only the statistics tell.
    result = RunResult(["clang-19"], 0, "warning: something unrelated\n", {})
    problem = grpc_env()._problem(episode, result)
    if expected is None:
        assert problem is None
    else:
        assert expected in problem
    assert not episode.stats.exists()

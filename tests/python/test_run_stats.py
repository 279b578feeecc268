"""The statistics record of every compiler-side binary (mlbridge.run_stats):
tests/golden/run_stats.json's lines (which tests/cpp/RunStatsTest.cpp checks
the C++ writer produces) read back into their values; malformed records are
refused, naming their line; records sum."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from mlbridge.errors import CodecError
from mlbridge.run_stats import KEYS, TOOLS, RunTotals, parse_run_stats, read_run_stats

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "run_stats.json"


def golden() -> List[Dict[str, Any]]:
    return json.loads(GOLDEN.read_text())


def test_the_golden_lines_read_back_into_their_records() -> None:
    cases = golden()
    assert sorted(case["tool"] for case in cases) == sorted(TOOLS)
    for case in cases:
        record = parse_run_stats(json.loads(case["line"]), case["tool"])
        assert (record.tool, record.unit, record.runner) == (
            case["tool"],
            case["unit"],
            case["runner"],
        )
        assert (record.decisions, record.answered, record.fallbacks) == (
            case["decisions"],
            case["answered"],
            case["fallbacks"],
        )
        assert record.first_error == (case["first_error"] or None)
        assert list(record.details.items()) == [tuple(pair) for pair in case["details"]]
        assert record.by_design == case["decisions"] - case["answered"] - case["fallbacks"]


def test_a_file_of_records_is_read_and_summed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    assert read_run_stats(path) == []
    path.write_text("".join(case["line"] for case in golden()))
    records = read_run_stats(path)
    totals = RunTotals.of(records)
    assert totals.units == 5 and totals.decisions == 12 + 33 + 40 + 3 + 2
    assert totals.fallbacks == 2 + 1 + 1 and totals.deciding == 5
    assert totals.first_error == "runner: timed out"
    assert totals.details["inlined"] == 5 and totals.details["compiler_status"] == 0
    assert "size_stopped" not in totals.details  # booleans are not summed


def _line(**changes: Any) -> str:
    record: Dict[str, Any] = json.loads(golden()[0]["line"])
    record.update(changes)
    return json.dumps(record) + "\n"


@pytest.mark.parametrize(
    "text",
    [
        "not json\n",
        "[1]\n",
        _line(decisions="12"),
        _line(fallbacks=True),
        _line(answered=-1),
        _line(answered=12),  # answered + fallbacks > decisions
        _line(first_error=""),
        _line(details=[1]),
        _line(details={"nested": {"a": 1}}),
        _line(extra=1),
        json.dumps({key: 0 for key in reversed(KEYS)}) + "\n",
    ],
)
def test_a_malformed_record_is_a_codec_error_naming_its_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(golden()[1]["line"] + text)
    with pytest.raises(CodecError, match="s.jsonl:2"):
        read_run_stats(path)


def test_a_file_over_the_budget_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(golden()[0]["line"] * 10)
    with pytest.raises(CodecError, match="larger than"):
        read_run_stats(path, max_bytes=100)

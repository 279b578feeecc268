"""atheris target: the statistics records of the compiler-side binaries
(mlbridge.run_stats.read_run_stats, on a file of the input's bytes).

Nothing but CodecError may escape; every record read has the record's keys
and types, counts that add up, and sums (RunTotals) that equal the sums of
its records. Seeds: tests/fuzz/corpus/fuzz_py_run_stats (the golden lines of
tests/golden/run_stats.json, alone and together).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import atheris
import fuzz_support  # first: imports mlbridge instrumented

with atheris.instrument_imports(include=["mlbridge"]):
    from mlbridge.errors import CodecError
    from mlbridge.run_stats import RunTotals, read_run_stats

_DIR = tempfile.mkdtemp(prefix="fuzz-run-stats-")
_PATH = Path(_DIR) / "stats.jsonl"


def test_one_input(data: bytes) -> None:
    """Read ``data`` as a statistics file."""
    _PATH.write_bytes(data)
    try:
        records = read_run_stats(_PATH, max_bytes=1 << 16)
    except CodecError:
        return
    for record in records:
        counts = (record.decisions, record.answered, record.fallbacks)
        if not all(isinstance(c, int) and c >= 0 for c in counts) or record.by_design < 0:
            raise AssertionError(f"counts {counts}")
        if record.first_error is not None and not record.first_error:
            raise AssertionError("an empty first_error")
    totals = RunTotals.of(records)
    if totals.units != len(records) or totals.decisions != sum(r.decisions for r in records):
        raise AssertionError(f"totals {totals}")


if __name__ == "__main__":
    try:
        fuzz_support.main(test_one_input)
    finally:
        _PATH.unlink(missing_ok=True)
        os.rmdir(_DIR)

"""The statistics record of mlbridge's compiler-side binaries, read.

Every binary (the LLVM inline-advisor plugin, ``mlbridge-phase-service``,
``mlbridge-interactive-host``, the GCC unroll plugin and the MLIR tiling
pass) appends one JSON line per unit it compiled to the file its ``stats``
option names, with the same keys (src/support/RunStats.h, docs/run-stats.md):

``tool``, ``unit``, ``runner``; ``decisions`` (the decisions made in the
unit), ``answered`` (those the runner's answer made), ``fallbacks`` (those
where the runner failed and the compiler's heuristic decided);
``first_error`` (why, the first time; null when nothing failed); and
``details``, what only that tool counts.

:func:`read_run_stats` reads a file of them, checking every line (the file
comes from a compiler the caller ran, but a record is still checked before
it is believed); :class:`RunTotals` sums them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Union

from mlbridge.errors import CodecError
from mlbridge.jsontext import load_json
from mlbridge.limits import DEFAULT_MAX_BYTES

__all__ = ["KEYS", "TOOLS", "RunStats", "RunTotals", "parse_run_stats", "read_run_stats"]

#: The keys of every record, in the order the binaries write them.
KEYS = (
    "tool",
    "unit",
    "runner",
    "decisions",
    "answered",
    "fallbacks",
    "first_error",
    "details",
)
#: The binaries that write records.
TOOLS = ("inline-advisor", "phase-service", "interactive-host", "gcc-unroll", "mlir-tiling")
_COUNTS = ("decisions", "answered", "fallbacks")

Detail = Union[int, float, bool, str, None]


@dataclass(frozen=True)
class RunStats:
    """One unit's record."""

    tool: str
    unit: str
    runner: str
    decisions: int
    answered: int
    fallbacks: int
    first_error: Optional[str]
    details: Dict[str, Detail] = field(default_factory=dict)

    @property
    def by_design(self) -> int:
        """Decisions that were the compiler's by design (a pragma, a
        deferred call site, a size cap, no runner)."""
        return self.decisions - self.answered - self.fallbacks

    def count(self, key: str) -> int:
        """The whole-number detail ``key`` (0 when absent)."""
        value = self.details.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_run_stats(record: Any, where: str) -> RunStats:
    """A record (a parsed JSON line) checked: CodecError naming ``where``
    when a key is missing, extra or of the wrong type, or the counts do not
    add up."""
    if not isinstance(record, dict):
        raise CodecError(f"{where}: a statistics record is a JSON object")
    if tuple(record) != KEYS:
        raise CodecError(f"{where}: a statistics record has the keys {KEYS}, not {tuple(record)}")
    for key in ("tool", "unit", "runner"):
        if not isinstance(record[key], str):
            raise CodecError(f"{where}: {key} must be a string")
    if not all(_count(record[key]) for key in _COUNTS):
        raise CodecError(f"{where}: {', '.join(_COUNTS)} must be whole numbers >= 0")
    if record["answered"] + record["fallbacks"] > record["decisions"]:
        raise CodecError(f"{where}: more answered and fallen back than decisions")
    error = record["first_error"]
    if not (error is None or (isinstance(error, str) and error)):
        raise CodecError(f"{where}: first_error must be null or a message")
    details = record["details"]
    if not isinstance(details, dict) or not all(
        value is None or isinstance(value, (int, float, bool, str)) for value in details.values()
    ):
        raise CodecError(f"{where}: details must be an object of numbers, booleans, strings")
    return RunStats(
        record["tool"],
        record["unit"],
        record["runner"],
        record["decisions"],
        record["answered"],
        record["fallbacks"],
        error,
        dict(details),
    )


def read_run_stats(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> List[RunStats]:
    """The records of ``path``, in order (none when it does not exist).
    CodecError naming the line for a record that is not one, or a file
    larger than ``max_bytes``."""
    if not path.exists():
        return []
    if path.stat().st_size > max_bytes:
        raise CodecError(f"{path}: larger than {max_bytes} bytes")
    with open(path, "rb") as lines:
        return [
            parse_run_stats(load_json(text, f"{path}:{number}", CodecError), f"{path}:{number}")
            for number, text in enumerate(lines, 1)
        ]


@dataclass
class RunTotals:
    """Records summed: ``units`` (0: the binary served nothing, e.g. its
    runner could not be created before any unit), ``deciding`` the units
    with at least one decision, ``first_error`` the first one of
    any unit, ``details`` the whole-number details summed."""

    units: int = 0
    decisions: int = 0
    answered: int = 0
    fallbacks: int = 0
    deciding: int = 0
    first_error: Optional[str] = None
    details: Dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[RunStats]) -> "RunTotals":
        totals = cls()
        for record in records:
            totals.units += 1
            totals.decisions += record.decisions
            totals.answered += record.answered
            totals.fallbacks += record.fallbacks
            totals.deciding += record.decisions > 0
            if totals.first_error is None:
                totals.first_error = record.first_error
            for key, value in record.details.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    totals.details[key] = totals.details.get(key, 0) + value
        return totals

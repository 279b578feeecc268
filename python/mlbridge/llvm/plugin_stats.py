"""The statistics of the LLVM inline-advisor plugin (``MLBRIDGE_INLINE_STATS``,
``-mlbridge-stats=``): one record per module the plugin's advisor served
(:mod:`mlbridge.run_stats`, tool ``inline-advisor``), appended when the
advisor ends. How a caller knows whether the model decided (and did not fall
back to LLVM's advice) without reading the compiler's stderr."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlbridge.errors import CodecError
from mlbridge.limits import DEFAULT_MAX_BYTES
from mlbridge.run_stats import RunTotals, read_run_stats

#: The plugin's own counts (the record's details), summed.
DETAILS = ("inlined", "compared", "agreed", "deferred", "after_size_stop")
#: The tool name of its records.
TOOL = "inline-advisor"


@dataclass
class InlineStats:
    """The records of a statistics file, summed: ``modules`` is the number of
    records (0: the plugin served no module, e.g. its runner could not be
    created), ``deciding`` the modules with at least one decision,
    ``first_error`` the first runner error of a module that fell back ("":
    none)."""

    modules: int = 0
    decisions: int = 0
    answered: int = 0
    fallbacks: int = 0
    deciding: int = 0
    first_error: str = ""
    inlined: int = 0
    compared: int = 0
    agreed: int = 0
    #: Call sites LLVM's size cap kept from the model.
    after_size_stop: int = 0
    #: Decisions that were LLVM's because the model says it answers LLVM's
    #: decision there (calls of linkonce_odr functions, where the plugin
    #: computes no MLGO feature and runs no model).
    deferred: int = 0


def read_inline_stats(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> InlineStats:
    """The statistics at ``path`` (none when it does not exist). A record
    that is not one (:func:`mlbridge.run_stats.parse_run_stats`) or not the
    inline advisor's, or a file larger than ``max_bytes``, is a CodecError
    naming it."""
    records = read_run_stats(path, max_bytes)
    for number, record in enumerate(records, 1):
        if record.tool != TOOL:
            raise CodecError(f"{path}:{number}: a record of {record.tool}, not of {TOOL}")
    totals = RunTotals.of(records)
    return InlineStats(
        modules=totals.units,
        decisions=totals.decisions,
        answered=totals.answered,
        fallbacks=totals.fallbacks,
        deciding=totals.deciding,
        first_error=totals.first_error or "",
        **{key: totals.details.get(key, 0) for key in DETAILS},
    )

"""The statistics file of the clang-19 inline-advisor plugin
(``MLBRIDGE_INLINE_STATS``, ``-mlbridge-stats=``): one JSON object per module the
plugin's advisor served, appended when the advisor ends. How a caller knows
whether the model decided (and did not fall back to LLVM's advice) without
reading the compiler's stderr."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlbridge.errors import CodecError
from mlbridge.jsontext import load_json
from mlbridge.limits import DEFAULT_MAX_BYTES

#: The counters of a line, summed by :func:`read_inline_stats`.
COUNTERS = ("decisions", "inlined", "fallbacks", "compared", "agreed")
#: The counters only newer plugins write, summed where a line has them.
OPTIONAL_COUNTERS = ("after_size_stop", "deferred")


@dataclass
class InlineStats:
    """The lines of a statistics file, summed: ``modules`` is the number of
    lines (0: the plugin served no module, e.g. its runner could not be
    created), ``deciding`` the modules that asked the model at least once,
    ``first_error`` the first runner error of a module that fell back."""

    modules: int = 0
    decisions: int = 0
    inlined: int = 0
    fallbacks: int = 0
    compared: int = 0
    agreed: int = 0
    deciding: int = 0
    first_error: str = ""
    #: Call sites LLVM's size cap kept from the model (summed where a line
    #: has the count).
    after_size_stop: int = 0
    #: Decisions that were LLVM's because the model says it answers LLVM's
    #: decision there (calls of linkonce_odr functions, where the plugin
    #: computes no MLGO feature and runs no model; summed where a line has
    #: the count).
    deferred: int = 0


def read_inline_stats(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> InlineStats:
    """The statistics at ``path`` (none when it does not exist). A line that
    is not an object with the counters as whole numbers, or a file larger
    than ``max_bytes``, is a CodecError naming it."""
    stats = InlineStats()
    if not path.exists():
        return stats
    if path.stat().st_size > max_bytes:
        raise CodecError(f"{path}: larger than {max_bytes} bytes")
    with open(path, "rb") as lines:
        for number, text in enumerate(lines, 1):
            where = f"{path}:{number}"
            record = load_json(text, where, CodecError)
            values = [record.get(key) for key in COUNTERS]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise CodecError(f"{where}: needs the whole-number counters {COUNTERS}")
            stats.modules += 1
            for key, value in zip(COUNTERS, values):
                setattr(stats, key, getattr(stats, key) + value)
            stats.deciding += record["decisions"] > 0
            for key in OPTIONAL_COUNTERS:
                value = record.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    setattr(stats, key, getattr(stats, key) + value)
            error = record.get("first_error")
            if not stats.first_error and isinstance(error, str):
                stats.first_error = error
    return stats

"""atheris target: the regalloc score's reading of llc's text
(mlbridge.problems.regalloc_eviction.score: block_frequencies on -print-machine-bfi
output, function_scores and module_score on MIR).

The input is MIR text, a NUL byte, then frequency text, decoded as
``read_text`` decodes files. The frequencies are read, then the MIR scored
with them, and with frequencies that give every block of every function
weight 1 (so the MIR is read whatever the frequency text). Nothing but
MlbridgeError may escape (ValueError and OverflowError escaped before, on
long numbers); a score is finite and not negative, and the module's is the
sum of its functions'. Seeds: tests/fuzz/corpus/fuzz_py_regalloc_text (llc-19's
MIR and frequencies of small functions, the unit tests' texts).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

import atheris
import fuzz_support  # first: imports mlbridge instrumented

with atheris.instrument_imports(include=["mlbridge"]):
    from mlbridge.errors import MlbridgeError
    from mlbridge.problems.regalloc_eviction.score import (
        RegallocScore,
        block_frequencies,
        function_scores,
        module_score,
    )


class _Ones(dict):
    """Every block's frequency is 1."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: Any) -> float:
        return 1.0


class _Everyone(dict):
    """Every function has :class:`_Ones`."""

    def get(self, key: Any, default: Optional[Any] = None) -> Any:
        return _Ones()


def _check(scores: Dict[str, RegallocScore], total: RegallocScore) -> None:
    for name, score in [*scores.items(), ("the module", total)]:
        for value in score.to_dict().values():
            if not (math.isfinite(value) and value >= 0):
                raise AssertionError(f"{name!r}: score {score}")
    summed = sum(s.score() for s in scores.values())
    if not math.isclose(total.score(), summed, rel_tol=1e-9, abs_tol=1e-9):
        raise AssertionError(f"the module's score {total.score()} is not the sum {summed}")


def test_one_input(data: bytes) -> None:
    """Read the frequencies and score the MIR of ``data``."""
    mir_bytes, _, bfi_bytes = data.partition(b"\0")
    mir = mir_bytes.decode("utf-8", "replace")
    bfi = bfi_bytes.decode("utf-8", "replace")
    try:
        frequencies = block_frequencies(bfi)
    except MlbridgeError:
        frequencies = None
    if frequencies is not None:
        for blocks in frequencies.values():
            if not all(math.isfinite(f) and f >= 0 for f in blocks.values()):
                raise AssertionError(f"frequencies {blocks}")
        try:
            _check(function_scores(mir, frequencies), module_score(mir, frequencies))
        except MlbridgeError:
            pass
    try:
        everyone = _Everyone()
        _check(function_scores(mir, everyone), module_score(mir, everyone))
    except MlbridgeError:
        pass


if __name__ == "__main__":
    fuzz_support.main(test_one_input)

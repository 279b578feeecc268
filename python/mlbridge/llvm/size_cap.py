"""LLVM 19's size cap on the ML inliner, and how to see that it struck.

``MLInlineAdvisor`` stops asking its model once the module grew past
``-ml-advisor-size-increase-threshold`` (2.0) times its size at the start of
inlining (pitfall #7); LLVM's default inliner has no such cap. A policy that
echoes LLVM's decision therefore reproduces the default inliner only with the
cap lifted (:data:`NO_CAP`), which :func:`mlbridge.llvm.run_compiler` does by
itself for policies marked ``echoes_default``.

When the cap stays in force, the compiler is asked to record the inliner's
"ForceStop" remarks in a file (``-pass-remarks-output`` for LLVM tools,
``-foptimization-record-file`` for clang: never on stderr), and
:func:`count_size_stops` reads how many call sites the cap kept from the
policy.
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence

from mlbridge.llvm.command import compiler_kind

#: A threshold no module reaches: the cap is lifted.
NO_CAP = 1e30

#: LLVM's own default threshold.
LLVM_DEFAULT_THRESHOLD = 2.0

_PASS = "^inline-ml$"
_STOP_RECORD = "Name:            ForceStop"


def effective_threshold(requested: Optional[float], echoes_default: bool) -> Optional[float]:
    """The threshold to pass to LLVM: ``requested`` if given, no cap for a
    policy echoing LLVM's decision, else None (LLVM's own 2.0)."""
    if requested is not None:
        return requested
    return NO_CAP if echoes_default else None


def remark_flags(command: Sequence[str], path: str) -> Optional[List[str]]:
    """Flags writing the ML inliner's remarks to ``path``, as
    (driver flags for clang, LLVM options otherwise); None when this command
    cannot take them (a clang command that also links: several outputs)."""
    if compiler_kind(command[0]) == "clang":
        if "-c" not in command and "-S" not in command:
            return None
        return [
            "-fsave-optimization-record=yaml",
            f"-foptimization-record-file={path}",
            f"-foptimization-record-passes={_PASS}",
        ]
    return [f"-pass-remarks-output={path}", f"-pass-remarks-filter={_PASS}"]


def count_size_stops(path: str) -> Optional[int]:
    """Call sites the cap kept from the policy, from a remarks file (None if
    the compiler wrote none)."""
    if not os.path.exists(path):
        return None
    count = 0
    with open(path, encoding="utf-8", errors="replace") as remarks:
        for line in remarks:
            if line.startswith(_STOP_RECORD):
                count += 1
    return count


def threshold_in_force(threshold: Optional[float]) -> Optional[float]:
    """The threshold in force for statistics: a factor, or None for no cap."""
    if threshold is None:
        return LLVM_DEFAULT_THRESHOLD
    return None if threshold >= NO_CAP else threshold


__all__ = [
    "LLVM_DEFAULT_THRESHOLD",
    "NO_CAP",
    "count_size_stops",
    "effective_threshold",
    "remark_flags",
    "threshold_in_force",
]

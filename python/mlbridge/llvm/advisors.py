"""Stock LLVM 19's three ML advisors (the decisions ``inlining``,
``regalloc-eviction`` and ``regalloc-priority``): their flags and the answer
checks they need.

Pitfalls of LLVM 19 handled here (see docs):

- #1: ``-inliner-interactive-include-default`` writes LLVM's decision into
  feature 25 (``callee_basic_block_count``) and leaves ``inlining_default``
  at 0: :func:`restore_inlining_default` moves it where it belongs.
- #4: an eviction answer whose mask column is 0 makes llc fail, one out of
  range crashes it: the evict guard rejects both before anything is sent.
- #5: the priority is cast to an unsigned 32-bit integer: the priority guard
  clamps to [0, 2**32) and maps NaN to 0.
- #7: ``-ml-advisor-size-increase-threshold`` (default 2.0): once the module
  grew by that factor the ML inliner is no longer asked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.policies import INLINING, REGALLOC_EVICTION, REGALLOC_PRIORITY
from mlbridge.policy import Policy, Session, as_decision_fn

#: Largest float32 below 2**32 (the largest priority LLVM can cast safely).
MAX_PRIORITY = float(np.nextafter(np.float32(2.0**32), np.float32(0)))

#: Index of the feature carrying LLVM's decision under include-default (pitfall #1).
DEFAULT_DECISION_FEATURE = 25
DEFAULT_DECISION_NAME = "callee_basic_block_count"


class AdvisorError(MlbridgeError):
    """A policy's answer would break the compiler (rejected, never sent)."""


class _Guard:
    """Wraps a policy: fix the features, check the answer; forwards ``begin``."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._decide = as_decision_fn(policy)

    def begin(self, session: Session) -> None:
        begin = getattr(self.policy, "begin", None)
        if callable(begin):
            begin(session)

    def __call__(self, features: Dict[str, np.ndarray], context: str = "") -> Any:
        return self._decide(features, context)


def restore_inlining_default(features: Dict[str, np.ndarray]) -> None:
    """Pitfall #1: move LLVM's decision from feature 25 to ``inlining_default``.

    For :class:`mlbridge.pipe_host.PipeHost`'s ``patch`` (writable views), so
    the policy and the training log both see the right ``inlining_default``.
    The true ``callee_basic_block_count`` is lost (LLVM overwrote it): it is
    set to -1 so that no policy or training mistakes it for a block count.
    """
    if "inlining_default" in features and DEFAULT_DECISION_NAME in features:
        features["inlining_default"][...] = features[DEFAULT_DECISION_NAME]
        features[DEFAULT_DECISION_NAME][...] = -1


def _single(value: Any, what: str) -> Any:
    if isinstance(value, dict):
        if len(value) != 1:
            raise AdvisorError(f"{what}: expected one output, got {sorted(value)}")
        value = next(iter(value.values()))
    arr = np.asarray(value)
    if arr.size != 1:
        raise AdvisorError(f"{what}: expected a single value, got {arr.size} values")
    return arr.reshape(-1)[0].item()


class _EvictGuard(_Guard):
    def __call__(self, features: Dict[str, np.ndarray], context: str = "") -> int:
        value = _single(self._decide(features, context), "eviction answer")
        mask = features["mask"].reshape(-1)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise AdvisorError(f"eviction answer must be an integer index, got {value!r}")
        if not 0 <= value < mask.size:
            raise AdvisorError(f"eviction answer {value} is out of range 0..{mask.size - 1}")
        if not mask[value]:
            raise AdvisorError(
                f"eviction answer {value} is not a legal candidate "
                f"(mask[{value}] == 0; legal: "
                f"{np.flatnonzero(mask).tolist()})"
            )
        return value


class _PriorityGuard(_Guard):
    def __call__(self, features: Dict[str, np.ndarray], context: str = "") -> np.float32:
        value = _single(self._decide(features, context), "priority")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise AdvisorError(f"priority must be a number, got {value!r}") from None
        if math.isnan(value):
            value = 0.0
        return np.float32(min(max(value, 0.0), MAX_PRIORITY))


@dataclass(frozen=True)
class Advisor:
    """The LLVM 19 ML advisor taking one decision."""

    problem: str  #: the decision: INLINING, REGALLOC_EVICTION or REGALLOC_PRIORITY
    output: str  #: name of the advice tensor LLVM declares

    def flags(
        self,
        base: str,
        include_default: bool = False,
        size_increase_threshold: Optional[float] = None,
    ) -> List[str]:
        """The LLVM options (without ``-mllvm``) serving this advisor on ``base``."""
        if self.problem == INLINING:
            flags = ["-enable-ml-inliner=release", f"-inliner-interactive-channel-base={base}"]
            if include_default:
                flags.append("-inliner-interactive-include-default")
            if size_increase_threshold is not None:
                flags.append(f"-ml-advisor-size-increase-threshold={size_increase_threshold:g}")
            return flags
        if self.problem == REGALLOC_EVICTION:
            return [
                "-regalloc-enable-advisor=release",
                f"-regalloc-evict-interactive-channel-base={base}",
            ]
        return [
            "-regalloc-enable-priority-advisor=release",
            f"-regalloc-priority-interactive-channel-base={base}",
        ]

    def guard(self, policy: Policy) -> Policy:
        """``policy`` wrapped with this advisor's answer checks (the inliner's
        answers need none: any non-zero value means "inline")."""
        if self.problem == INLINING:
            return policy
        if self.problem == REGALLOC_EVICTION:
            return _EvictGuard(policy)
        return _PriorityGuard(policy)


#: Each decision of :data:`mlbridge.policies.LLVM_DECISIONS` and its advisor
#: (the priority advisor is served, but no problem trains it yet).
ADVISORS: Dict[str, Advisor] = {
    INLINING: Advisor(INLINING, "inlining_decision"),
    REGALLOC_EVICTION: Advisor(REGALLOC_EVICTION, "index_to_evict"),
    REGALLOC_PRIORITY: Advisor(REGALLOC_PRIORITY, "priority"),
}


def get_advisor(problem: str) -> Advisor:
    """The advisor taking the decision ``problem`` (one of :data:`ADVISORS`)."""
    try:
        return ADVISORS[problem]
    except KeyError:
        raise AdvisorError(
            f"LLVM has no advisor for '{problem}'; expected one of {', '.join(ADVISORS)}"
        ) from None

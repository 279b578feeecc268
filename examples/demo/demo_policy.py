"""The demo's inlining policy: a small hand-written size heuristic on the
MLGO inliner features (LLVM 19's 38 ``int64`` features)."""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np


def policy(features: Dict[str, np.ndarray]) -> int:
    """1 (inline) when inlining is unlikely to grow the code, else 0."""
    cost = int(features["cost_estimate"][0])
    blocks = int(features["callee_basic_block_count"][0])
    last_call = int(features["last_call_to_static_bonus"][0])
    if cost <= 0:
        return 1  # LLVM's own estimate says the call costs more than the body
    if last_call and blocks <= 8:
        return 1  # the callee disappears once its only call is inlined
    if blocks == 1 and cost < 20:
        return 1  # straight-line, tiny
    return 0


class CountingPolicy:
    """Wraps a policy, counting its decisions and how many said "inline"."""

    def __init__(self, inner=policy) -> None:
        self.inner = inner
        self.decisions = 0
        self.inlined = 0
        #: (cost_estimate, callee_basic_block_count, last_call_to_static_bonus,
        #: decision) of every decision, for the deployment replay.
        self.records: List[Tuple[int, int, int, int]] = []

    def __call__(self, features: Dict[str, np.ndarray]) -> int:
        decision = int(self.inner(features))
        self.decisions += 1
        self.inlined += decision != 0
        self.records.append(
            (
                int(features["cost_estimate"][0]),
                int(features["callee_basic_block_count"][0]),
                int(features["last_call_to_static_bonus"][0]),
                decision,
            )
        )
        return decision

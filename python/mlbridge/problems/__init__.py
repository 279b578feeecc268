"""Every optimisation problem mlbridge knows, declared once (docs/gym.md,
docs/training.md).

A problem is one module of this package holding a :class:`Problem`: its
gymnasium id and environment, how its compiler session lives, the features
a policy must not see, the deployed model's inputs and output, the training
defaults, and how a trained policy is deployed and measured. The gymnasium
ids (:mod:`mlbridge.gym`), ``mlbridge train`` and its evaluation read this
registry; nothing else names a problem.

Declarations are data: the environment, the deployed inputs and the
evaluation are named by entry points (``"module:attribute"``, as gymnasium
names environments) and imported when used, so that this package imports
neither gymnasium nor the training stack.
"""

from __future__ import annotations

from typing import Dict

from mlbridge.problems import (
    gcc_unroll,
    inlining,
    mlir_tiling,
    phase_ordering,
    regalloc_eviction,
)
from mlbridge.problems.problem import (
    SESSIONS,
    Answer,
    DeployInputs,
    EntryPoint,
    Problem,
    resolve,
)

__all__ = [
    "PROBLEMS",
    "Answer",
    "SESSIONS",
    "DeployInputs",
    "EntryPoint",
    "Problem",
    "environments",
    "get_problem",
    "resolve",
]

#: Every problem, by name: one line each.
PROBLEMS: Dict[str, Problem] = {
    p.name: p
    for p in (
        inlining.PROBLEM,
        phase_ordering.PROBLEM,
        regalloc_eviction.PROBLEM,
        gcc_unroll.PROBLEM,
        mlir_tiling.PROBLEM,
    )
}


def get_problem(name: str) -> Problem:
    """The problem called ``name``."""
    try:
        return PROBLEMS[name]
    except KeyError:
        raise ValueError(f"unknown problem {name!r} (one of {', '.join(PROBLEMS)})") from None


def environments() -> Dict[str, str]:
    """Every problem's gymnasium id -> environment entry point."""
    return {p.env_id: p.environment for p in PROBLEMS.values()}

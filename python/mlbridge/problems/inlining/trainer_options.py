"""The options of the inlining problem's own trainers (``mlbridge train
inlining --method search|loop``)."""

from __future__ import annotations

from typing import Any, Callable, Dict


def add_search_options(group: Any, natural: Callable[[str], int]) -> Dict[str, Any]:
    """Adds them to ``group``; each one's destination -> default."""
    group.add_argument("--rounds", type=natural, default=10, help="rounds at most (default 10)")
    group.add_argument(
        "--units-per-round", type=natural, default=40, help="training units searched per round"
    )
    group.add_argument(
        "--margin",
        type=float,
        help="subtracted from the policy's flip logit: it flips LLVM's decision only where "
        "it is this sure (default 1.0; larger flips less)",
    )
    return {"rounds": 10, "units_per_round": 40, "margin": None}


def add_loop_options(group: Any, natural: Callable[[str], int]) -> Dict[str, Any]:
    """Adds them to ``group``; each one's destination -> default."""
    group.add_argument(
        "--es-iterations",
        type=natural,
        default=8,
        help="evolution-strategies iterations after the imitation (0: no search)",
    )
    group.add_argument(
        "--repeats",
        type=natural,
        default=1,
        help="rounds of the deployment measurements (compile time: the fastest)",
    )
    return {"es_iterations": 8, "repeats": 1}

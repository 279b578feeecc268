"""The options of the inlining problem's own trainers (``mlbridge train
inlining --method search|loop``)."""

from __future__ import annotations

from typing import Any, Callable, Tuple


def add_search_options(group: Any, natural: Callable[[str], int]) -> Tuple[str, ...]:
    """Adds them to ``group``; their destinations."""
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
    return ("rounds", "units_per_round", "margin")


def add_loop_options(group: Any, natural: Callable[[str], int]) -> Tuple[str, ...]:
    """Adds them to ``group``; their destinations."""
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
    return ("es_iterations", "repeats")

#!/usr/bin/env python3
"""Environment throughput: steps per second of an mlbridge environment with
1 and with N rollout workers of a pool (Ray actors by default), same run.

    .venv/bin/python bench/gym_throughput.py --env inlining --workers 1 2
    .venv/bin/python bench/gym_throughput.py --env phase-ordering --backend process

Every problem of the registry (``mlbridge.problems``) can be measured.

A step is one decision (a call site; a pass). Each configuration runs a
warm-up rollout, then ``--steps`` steps per worker, timed on the wall clock
of the caller (the pool's own overhead included); the configurations
alternate for ``--repeats`` rounds and the median of each is printed with
its ratio to the first configuration (each round's ratio, paired; the
median and the range over rounds). The policy answers the compiler's own decision
(``--policy default``: what a warm-started policy imitates, the problem's
warm-start feature, heuristic or baseline action; random where a problem has
none) or uniformly random actions (``--policy random``). Worker i is seeded with
``--seed`` + i, so N workers do different episodes than one worker does;
with ``--same-work`` every worker is reseeded with ``--seed`` and repeats
the single worker's episodes, so that the ratio measures the pool and the
machine only (a phase-ordering step costs 2 to 700 ms depending on the
module and the pass: different random streams differ in cost by 2x over a
few thousand steps). How long each worker was busy is printed too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from typing import Any, Dict, List, Optional


def _problem(name: str) -> Any:
    from mlbridge.problems import get_problem

    return get_problem(name)


def _policy(env: str, which: str, feature_names: List[str]) -> Optional[Any]:
    """The compiler's own decision over the raw features, or None (random)."""
    if which == "random":
        return None
    from mlbridge.train.ppo import warm_policy

    return warm_policy(_problem(env), feature_names)


def measure(args: argparse.Namespace, workers: int) -> Dict[str, Any]:
    from mlbridge.gym.pool import make_pool

    with make_pool(
        _problem(args.env).env_id,
        workers,
        {"quick": True},
        backend=args.backend,
        address=args.address,
        seed=args.seed,
    ) as pool:
        names = list(pool.call("attribute", [("feature_names",)] * workers)[0])
        policy = _policy(args.env, args.policy, names)
        if args.same_work:
            pool.call("reseed", [(args.seed,)] * workers)
        pool.rollout(policy, args.warmup)
        start = time.monotonic()
        rollouts = pool.rollout(policy, args.steps)
        wall = time.monotonic() - start
    steps = sum(r.steps for r in rollouts)
    episodes = sum(len(r.episodes) for r in rollouts)
    return {
        "workers": workers,
        "steps": steps,
        "episodes": episodes,
        "seconds": round(wall, 3),
        "worker_seconds": [round(r.seconds, 3) for r in rollouts],
        "steps_per_second": round(steps / wall, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    from mlbridge.problems import PROBLEMS

    parser.add_argument("--env", choices=sorted(PROBLEMS), default="inlining")
    parser.add_argument("--backend", choices=("ray", "process", "serial"), default="ray")
    parser.add_argument("--address", help="a Ray cluster (default: this machine)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=3000, help="timed steps per worker")
    parser.add_argument("--warmup", type=int, default=200, help="untimed steps per worker")
    parser.add_argument("--policy", choices=("default", "random"), default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="rounds; the configurations alternate within a round (this VM's speed drifts), "
        "the median of each is reported",
    )
    parser.add_argument(
        "--same-work",
        action="store_true",
        help="every worker reseeded with --seed: the same episodes and actions on each, so "
        "that N workers do N times the work of one (by default worker i has seed + i, and "
        "workers of a costly environment such as phase ordering finish far apart)",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    chosen = _problem(args.env)
    from mlbridge.problems.capabilities import AnswerTable, CompilerDecision, Heuristic

    follows = (CompilerDecision, Heuristic, AnswerTable)
    if args.policy == "default" and not any(chosen.get(kind) for kind in follows):
        args.policy = "random"  # no decision of the compiler's own to follow
    rounds = [[measure(args, w) for w in args.workers] for _ in range(args.repeats)]
    results = []
    for i in range(len(args.workers)):
        runs = sorted((r[i] for r in rounds), key=lambda r: r["steps_per_second"])
        median = dict(runs[len(runs) // 2])
        median["all_steps_per_second"] = [r["steps_per_second"] for r in runs]
        # Paired within each round (the configurations ran back to back).
        ratios = sorted(r[i]["steps_per_second"] / r[0]["steps_per_second"] for r in rounds)
        median["ratio"] = round(ratios[len(ratios) // 2], 3)
        median["ratio_range"] = [round(ratios[0], 3), round(ratios[-1], 3)]
        results.append(median)
    report = {
        "date": datetime.date.today().isoformat(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "executable": sys.executable,
        "cpus": os.cpu_count(),
        "env": _problem(args.env).env_id,
        "backend": args.backend,
        "policy": args.policy,
        "same_work": args.same_work,
        "results": results,
    }
    print(
        f"{report['env']} on {args.backend}, policy {args.policy}"
        f"{', the same work on every worker' if args.same_work else ''}, {report['date']}, "
        f"{report['python']}, {report['cpus']} CPUs"
    )
    for r in results:
        print(
            f"  {r['workers']} worker(s): {r['steps_per_second']:9.1f} steps/s "
            f"({r['steps']} steps, {r['episodes']} episodes, {r['seconds']} s; workers "
            f"busy {', '.join(f'{t:.1f}' for t in r['worker_seconds'])} s) "
            f"x{r['ratio']:.2f} (rounds: {r['ratio_range'][0]:.2f}-{r['ratio_range'][1]:.2f})"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

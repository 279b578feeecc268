#!/usr/bin/env python3
"""Phase ordering: a step of mlbridge/PhaseOrdering-v0 (the long-lived
mlbridge-phase-service) against a step made by running opt-19, same run.

    .venv/bin/python bench/phase_service_vs_opt.py
    .venv/bin/python bench/phase_service_vs_opt.py --sequences 3 --steps 32 --json out.json

On every module of the quick corpus (``split="all"``: the demo programs,
lz4's files and xxHash), the same seeded random action sequences are applied

- (a) through the environment: ``env.step(action)``, timed on the caller's
  wall clock: the pass, the verifier, the Autophase features and the
  observation over the pipes (the module's load and ``-Oz`` baseline, at
  ``reset``, are not counted);
- (b) by one ``opt-19 -passes=PIPELINE cur.bc -o next.bc`` process per step,
  the action's own pipeline: the pass applied and the bitcode written, no
  features and no verifier beyond opt's own: a lower bound of the cost of
  that approach (CompilerGym-style environments that shell out per step).

Per-step milliseconds of both (mean and median), the ratio, and the
environment's steps per second are printed with the date, the Python
version and the CPU count; and, as a check that both made the same thing,
how many of opt's final modules have the instruction count the service
reached (loaded into a second environment to be counted).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List


def _sequences(args: argparse.Namespace, modules: List[str], actions: int) -> Dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(args.seed)
    return {
        name: [rng.integers(actions, size=args.steps).tolist() for _ in range(args.sequences)]
        for name in modules
    }


def through_env(env: Any, sequences: Dict[str, List[List[int]]]) -> Dict[str, Any]:
    """(a): every sequence as one episode of the environment."""
    per_module: Dict[str, List[float]] = {}
    resets: List[float] = []
    errors: List[str] = []
    finals: List[int] = []  # the instruction count after each sequence
    for name, runs in sequences.items():
        times = per_module.setdefault(name, [])
        for actions in runs:
            start = time.perf_counter()
            env.reset(options={"module": name})
            resets.append(time.perf_counter() - start)
            for action in actions:
                start = time.perf_counter()
                _, _, _, truncated, info = env.step(action)
                times.append(time.perf_counter() - start)
                if "error" in info:
                    errors.append(f"{name}: {info['error']}")
                if truncated:
                    break
            finals.append(info["instcount"])
    return {"per_module": per_module, "resets": resets, "errors": errors, "finals": finals}


def through_opt(
    opt: str, env: Any, sequences: Dict[str, List[List[int]]], workdir: str
) -> Dict[str, Any]:
    """(b): every action of every sequence as one opt process."""
    by_name = {m.name: m for m in env.modules}
    per_module: Dict[str, List[float]] = {}
    errors: List[str] = []
    finals: List[str] = []  # the module after each sequence
    for name, runs in sequences.items():
        times = per_module.setdefault(name, [])
        for actions in runs:
            current = os.path.join(workdir, "cur.bc")
            shutil.copyfile(by_name[name].bitcode, current)
            for action in actions:
                pipeline = env.actions[action][1]
                following = os.path.join(workdir, "next.bc")
                start = time.perf_counter()
                done = subprocess.run(
                    [opt, f"-passes={pipeline}", current, "-o", following],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                times.append(time.perf_counter() - start)
                if done.returncode != 0:
                    tail = done.stderr.decode("utf-8", "replace").strip()[-200:]
                    errors.append(f"{name}: {env.actions[action][0]}: {tail}")
                    continue
                os.replace(following, current)
            finals.append(os.path.join(workdir, f"final-{len(finals)}.bc"))
            os.replace(current, finals[-1])
    return {"per_module": per_module, "errors": errors, "finals": finals}


def same_results(service: List[int], opt: List[str], step_timeout: float) -> int:
    """How many of opt's final modules have the instruction count the
    service reached with the same actions (counted by the service)."""
    from mlbridge.gym.phase_ordering import PhaseOrderingEnv

    env = PhaseOrderingEnv(opt, max_steps=1, step_timeout=step_timeout)
    try:
        same = 0
        for path, count in zip(opt, service):
            _, info = env.reset(options={"module": os.path.basename(path)[:-3]})
            same += info["initial_instcount"] == count
        return same
    finally:
        env.close()


def _ms(values: List[float]) -> Dict[str, float]:
    return {
        "steps": len(values),
        "mean_ms": round(1000 * statistics.fmean(values), 3) if values else 0.0,
        "median_ms": round(1000 * statistics.median(values), 3) if values else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=2, help="random sequences per module")
    parser.add_argument("--steps", type=int, default=16, help="actions per sequence")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", help="the corpus (default: the loop's, with the demos)")
    parser.add_argument("--opt", default="opt-19", help="the opt program")
    parser.add_argument("--rollback", choices=("step", "pristine"), default="step")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    from mlbridge.gym.phase_ordering import PhaseOrderingEnv

    env = PhaseOrderingEnv(
        corpus=args.corpus, split="all", quick=True, max_steps=args.steps, rollback=args.rollback
    )
    workdir = tempfile.mkdtemp(prefix="mlbridge-bench-opt-")
    try:
        sequences = _sequences(args, [m.name for m in env.modules], len(env.actions))
        for name in sequences:  # warm up: the service, each module's -Oz baseline
            env.reset(options={"module": name})
        served = through_env(env, sequences)
        opt = through_opt(args.opt, env, sequences, workdir)
        env.close()
        same = same_results(served["finals"], opt["finals"], env.step_timeout)
    finally:
        env.close()
        shutil.rmtree(workdir, ignore_errors=True)

    modules = []
    for name in sequences:
        a, b = _ms(served["per_module"][name]), _ms(opt["per_module"][name])
        ratio = b["mean_ms"] / a["mean_ms"] if a["mean_ms"] else 0.0
        modules.append({"module": name, "env": a, "opt": b, "ratio": round(ratio, 2)})
    env_all = _ms([t for ts in served["per_module"].values() for t in ts])
    opt_all = _ms([t for ts in opt["per_module"].values() for t in ts])
    env_seconds = sum(sum(ts) for ts in served["per_module"].values())
    report = {
        "date": datetime.date.today().isoformat(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "executable": sys.executable,
        "cpus": os.cpu_count(),
        "opt": args.opt,
        "rollback": args.rollback,
        "seed": args.seed,
        "sequences_per_module": args.sequences,
        "steps_per_sequence": args.steps,
        "env": {
            **env_all,
            "steps_per_second": round(env_all["steps"] / env_seconds, 1) if env_seconds else 0.0,
            "reset_mean_ms": round(1000 * statistics.fmean(served["resets"]), 3),
            "errors": served["errors"],
        },
        "opt_per_step": {**opt_all, "errors": opt["errors"]},
        "ratio": round(opt_all["mean_ms"] / env_all["mean_ms"], 2) if env_all["mean_ms"] else 0.0,
        "same_instcount": same,
        "sequences": len(served["finals"]),
        "modules": modules,
    }
    print(
        f"mlbridge/PhaseOrdering-v0 vs one {args.opt} per step, {report['date']}, "
        f"{report['python']}, {report['cpus']} CPUs; {args.sequences} random sequences "
        f"of {args.steps} actions per module, seed {args.seed}, rollback={args.rollback}"
    )
    print(f"  {'module':<16} {'steps':>5} {'env ms/step':>12} {'opt ms/step':>12} {'opt/env':>8}")
    for m in modules:
        print(
            f"  {m['module']:<16} {m['env']['steps']:>5} {m['env']['mean_ms']:>12.2f} "
            f"{m['opt']['mean_ms']:>12.2f} {m['ratio']:>7.1f}x"
        )
    print(
        f"  {'all':<16} {env_all['steps']:>5} {env_all['mean_ms']:>12.2f} "
        f"{opt_all['mean_ms']:>12.2f} {report['ratio']:>7.1f}x"
    )
    print(
        f"  env: {report['env']['steps_per_second']} steps/s (median "
        f"{env_all['median_ms']:.2f} ms/step; reset {report['env']['reset_mean_ms']:.1f} ms); "
        f"opt: median {opt_all['median_ms']:.2f} ms/step"
    )
    print(
        f"  the same final instruction count after {same} of {len(served['finals'])} "
        f"sequences (opt's modules counted by the service)"
    )
    for what, errors in (("env", served["errors"]), ("opt", opt["errors"])):
        if errors:
            print(f"  {what}: {len(errors)} failed steps, e.g. {errors[0]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
  that approach (CompilerGym-style environments that shell out per step);
- (c) by one ``opt-19 -passes=verify cur.bc -o /dev/null``: what such a
  process costs besides the pass (start-up, reading and writing bitcode).

The three run back to back for every action, so that the machine's drift
(1.5-2x between runs on a shared VM) hits them alike. Per module and in
all: per-step milliseconds, the ratio opt/env, the pass's own time (b - c),
the service's overhead beyond the pass (a - pass: copies, verifier,
features, pipes) and the ceiling opt/pass: the ratio a service costing
nothing beyond the pass would reach. Printed with the date, the Python
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


def _run_opt(opt: str, pipeline: str, current: str, following: str) -> "tuple[float, str]":
    """One opt process: its wall time and, when it failed, its stderr's tail."""
    start = time.perf_counter()
    done = subprocess.run(
        [opt, f"-passes={pipeline}", current, "-o", following],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    took = time.perf_counter() - start
    tail = "" if done.returncode == 0 else done.stderr.decode("utf-8", "replace").strip()[-200:]
    return took, tail


def paired(
    opt: str, env: Any, sequences: Dict[str, List[List[int]]], workdir: str
) -> Dict[str, Any]:
    """Every action of every sequence, three ways in a row (so that the
    machine's drift hits all three alike): (a) ``env.step``; (b) one opt
    process running the action; (c) one opt process running ``verify``
    on the same module, what a process per step costs besides the pass."""
    by_name = {m.name: m for m in env.modules}
    times: Dict[str, Dict[str, List[float]]] = {}
    resets: List[float] = []
    errors: Dict[str, List[str]] = {"env": [], "opt": []}
    finals: Dict[str, List[Any]] = {"env": [], "opt": []}
    current = os.path.join(workdir, "cur.bc")
    following = os.path.join(workdir, "next.bc")
    for name, runs in sequences.items():
        t = times.setdefault(name, {"env": [], "opt": [], "fixed": []})
        for actions in runs:
            start = time.perf_counter()
            env.reset(options={"module": name})
            resets.append(time.perf_counter() - start)
            shutil.copyfile(by_name[name].bitcode, current)
            for action in actions:
                start = time.perf_counter()
                _, _, _, truncated, info = env.step(action)
                t["env"].append(time.perf_counter() - start)
                if "error" in info:
                    errors["env"].append(f"{name}: {info['error']}")
                took, failed = _run_opt(opt, env.actions[action][1], current, following)
                t["opt"].append(took)
                t["fixed"].append(_run_opt(opt, "verify", current, os.devnull)[0])
                if failed:
                    errors["opt"].append(f"{name}: {env.actions[action][0]}: {failed}")
                else:
                    os.replace(following, current)
                if truncated:
                    break
            finals["env"].append(info["instcount"])
            finals["opt"].append(os.path.join(workdir, f"final-{len(finals['opt'])}.bc"))
            os.replace(current, finals["opt"][-1])
    return {"times": times, "resets": resets, "errors": errors, "finals": finals}


def same_results(service: List[int], opt: List[str], step_timeout: float) -> int:
    """How many of opt's final modules have the instruction count the
    service reached with the same actions (counted by the service)."""
    from mlbridge.problems.phase_ordering.environment import PhaseOrderingEnv

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

    from mlbridge.problems.phase_ordering.environment import PhaseOrderingEnv

    env = PhaseOrderingEnv(
        corpus=args.corpus, split="all", quick=True, max_steps=args.steps, rollback=args.rollback
    )
    workdir = tempfile.mkdtemp(prefix="mlbridge-bench-opt-")
    try:
        sequences = _sequences(args, [m.name for m in env.modules], len(env.actions))
        for name in sequences:  # warm up: the service, each module's -Oz baseline
            env.reset(options={"module": name})
        run = paired(args.opt, env, sequences, workdir)
        env.close()
        same = same_results(run["finals"]["env"], run["finals"]["opt"], env.step_timeout)
    finally:
        env.close()
        shutil.rmtree(workdir, ignore_errors=True)

    def summary(t: Dict[str, List[float]]) -> Dict[str, Any]:
        out = {k: _ms(v) for k, v in t.items()}
        e, o, f = (out[k]["mean_ms"] for k in ("env", "opt", "fixed"))
        out["ratio"] = round(o / e, 2) if e else 0.0
        # The pass's own time (opt's, less a process that does no pass) and
        # what the ratio would be if a step cost the service nothing else.
        out["pass_ms"] = round(max(o - f, 0.0), 3)
        out["overhead_ms"] = round(e - out["pass_ms"], 3)
        out["ceiling"] = round(o / out["pass_ms"], 2) if out["pass_ms"] > 0 else None
        return out

    modules = [{"module": n, **summary(t)} for n, t in run["times"].items()]
    every: Dict[str, List[float]] = {"env": [], "opt": [], "fixed": []}
    for t in run["times"].values():
        for k in every:
            every[k] += t[k]
    total = summary(every)
    env_seconds = sum(every["env"])
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
        "all": total,
        "steps_per_second": round(len(every["env"]) / env_seconds, 1) if env_seconds else 0.0,
        "reset_mean_ms": round(1000 * statistics.fmean(run["resets"]), 3),
        "errors": run["errors"],
        "ratio": total["ratio"],
        "same_instcount": same,
        "sequences": len(run["finals"]["env"]),
        "modules": modules,
    }
    print(
        f"mlbridge/PhaseOrdering-v0 vs one {args.opt} per step, {report['date']}, "
        f"{report['python']}, {report['cpus']} CPUs; {args.sequences} random sequences "
        f"of {args.steps} actions per module, seed {args.seed}, rollback={args.rollback}"
    )
    print(
        "  per step, means in ms: env = env.step; opt = an opt process running the action; "
        "pass = opt less an opt running only 'verify';\n  overhead = env - pass (the service "
        "and the pipes); ceiling = opt/pass, the ratio with no overhead at all"
    )
    header = ("module", "steps", "env", "opt", "pass", "overhead", "opt/env", "ceiling")
    print("  {:<16} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}".format(*header))
    for m in modules + [{"module": "all", **total}]:
        ceiling = f"{m['ceiling']:.1f}x" if m["ceiling"] else "-"
        print(
            f"  {m['module']:<16} {m['env']['steps']:>5} {m['env']['mean_ms']:>8.2f} "
            f"{m['opt']['mean_ms']:>8.2f} {m['pass_ms']:>8.2f} {m['overhead_ms']:>8.2f} "
            f"{m['ratio']:>7.1f}x {ceiling:>8}"
        )
    print(
        f"  env: {report['steps_per_second']} steps/s (median "
        f"{total['env']['median_ms']:.2f} ms/step; reset {report['reset_mean_ms']:.1f} ms); "
        f"opt: median {total['opt']['median_ms']:.2f} ms/step; median opt/env "
        f"{total['opt']['median_ms'] / total['env']['median_ms']:.1f}x"
    )
    print(
        f"  the same final instruction count after {same} of {report['sequences']} "
        f"sequences (opt's modules counted by the service)"
    )
    for what, errors in run["errors"].items():
        if errors:
            print(f"  {what}: {len(errors)} failed steps, e.g. {errors[0]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Unroll factors from a model in stock gcc-12, measured (docs/gcc-plugin.md).

    python studies/gcc_unroll.py [--rounds N] [--calls N] [--json FILE]

A thin use of the ``mlbridge/GccUnroll-v0`` environment's deployment
(``GccUnrollEnv.deploy``: a kernel built with a runner and with GCC's own
factors, both run in turn, checksums compared):

1. Search: every kernel of the suite (``mlbridge.problems.gcc_unroll.kernels``, every split)
   with one constant factor for all its loops (runner ``constant:F``), F in
   1, 2, 4, 8.
2. Fit: the loops of each *training* kernel are labelled with the kernel's
   fastest factor (GCC's own, 0, unless a factor is more than 3% faster),
   and ``mlbridge.gcc.UnrollPolicy`` is fitted to their features.
3. Deploy: the policy, compiled ahead of time (mlbridge-aot), decides in the
   plugin on every kernel; reported per split, so the validation and
   held-out kernels show how the fitted policy does on kernels it did not see.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from mlbridge.aot.loadable import build_aot_module
from mlbridge.gcc import FACTORS, UnrollPolicy
from mlbridge.problems.gcc_unroll import kernels
from mlbridge.problems.gcc_unroll.environment import GccUnrollEnv, suite_modules
from mlbridge.runner_config import RunnerConfig

#: How much faster than GCC's own a factor must be to be preferred.
MARGIN = 0.03
SPLITS = ("train", "validation", "held-out")


def _geomean(values: List[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of every program")
    parser.add_argument("--calls", type=int, default=1000, help="calls of a kernel per batch")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        modules = [m for split in SPLITS for m in suite_modules(split, work / "kernels")]
        env = GccUnrollEnv(modules=modules, rounds=args.rounds, calls=args.calls)
        try:
            # 1. Search: one constant factor at a time, against GCC's own.
            search: Dict[str, Dict[int, dict]] = {}
            for module in env.modules:
                search[module.name] = {
                    f: env.deploy(module.name, str(RunnerConfig(kind="constant", argument=str(f))))
                    for f in FACTORS[1:]
                }
            labels = {}
            for name, by_factor in search.items():
                best, speedup = 0, 1.0 / (1.0 - MARGIN)
                for factor, report in by_factor.items():
                    if report["speedup"] > speedup:
                        best, speedup = factor, report["speedup"]
                labels[name] = best
            # 2. Fit on the loops of the training kernels only.
            rows, targets = [], []
            for name, by_factor in search.items():
                if kernels.split_of(name) == "train":
                    loops = by_factor[FACTORS[1]]["features"]
                    rows += loops
                    targets += [labels[name]] * len(loops)
            policy = UnrollPolicy.fit(rows, targets)
            policy.to_onnx(work / "policy.onnx")
            module = build_aot_module(work / "policy.onnx", work / "aot", "UnrollPolicy")
            # 3. Deploy the AOT-compiled policy on every kernel.
            aot = str(RunnerConfig(kind="aot", argument=str(module)))
            deployed = {m.name: env.deploy(m.name, aot) for m in env.modules}
        finally:
            env.close()
    rows_out = []
    print(
        f"{'kernel':<15}{'split':>11}{'gcc ns':>10}{'model ns':>10}{'speedup':>9}  searched  model"
    )
    for name, report in deployed.items():
        split = kernels.split_of(name)
        row = {
            "kernel": name,
            "split": split,
            "gcc_ns": report["default_seconds"] * 1e9,
            "model_ns": report["seconds"] * 1e9,
            "speedup": report["speedup"],
            "searched_factor": labels[name],
            "model_factors": report["answers"],
            "search_speedup": {f: search[name][f]["speedup"] for f in FACTORS[1:]},
        }
        rows_out.append(row)
        print(
            f"{name:<15}{split:>11}{row['gcc_ns']:>10.1f}{row['model_ns']:>10.1f}"
            f"{row['speedup']:>9.2f}  {labels[name]:>8}  {report['answers']}"
        )
    by_split = {s: _geomean([r["speedup"] for r in rows_out if r["split"] == s]) for s in SPLITS}
    print(
        "geometric mean speedup over GCC's own factors: "
        + ", ".join(f"{s} {v:.3f}" for s, v in by_split.items())
    )
    if args.json:
        args.json.write_text(
            json.dumps({"kernels": rows_out, "geomean_speedup_by_split": by_split}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

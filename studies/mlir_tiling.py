"""Tile sizes from a model in stock mlir-opt-19, measured (docs/mlir-plugin.md).

    python studies/mlir_tiling.py [--rounds N] [--per-split N] [--json FILE]

A thin use of the ``mlbridge/MlirTiling-v0`` environment's deployment
(``MlirTilingEnv.deploy``: a kernel tiled with a runner and with the pass's
own sizes, both lowered and run in turn by mlir-cpu-runner-19, checksums
compared):

1. Search: every kernel of ``mlbridge.problems.mlir_tiling.kernels.suite()`` (every split)
   tiled with each row of TILE_CHOICES (a constant policy, in-process under
   ONNX Runtime).
2. Fit: each *training* kernel's nests are labelled with its fastest choice
   (the pass's own sizes unless a choice is more than 3% faster), and a
   TilePolicy is fitted to the nests' features.
3. Deploy: the policy, compiled ahead of time (mlbridge-aot), decides in the
   pass on every kernel; reported per split (the kinds of kernel of the
   validation and held-out splits are not in the training one), with the
   runner's time per decision next to mlir-opt's whole run.
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
from mlbridge.mlir import TILE_CHOICES, TilePolicy
from mlbridge.mlir.policy import LAYOUT
from mlbridge.problems.mlir_tiling import kernels
from mlbridge.problems.mlir_tiling.environment import MlirTilingEnv, suite_modules
from mlbridge.runner_config import RunnerConfig

#: How much faster than the heuristic's a choice must be to be preferred.
MARGIN = 0.03
SPLITS = ("train", "validation", "held-out")


def _geomean(values: List[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs of every program")
    parser.add_argument("--repeats", type=int, default=5, help="kernel calls per program")
    parser.add_argument(
        "--per-split", type=int, help="only the first N kernels of each split (a quick run)"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        modules = [
            m
            for split in SPLITS
            for m in suite_modules(split, work / "kernels", args.repeats)[: args.per_split]
        ]
        env = MlirTilingEnv(modules=modules, rounds=args.rounds)
        try:
            choices = []
            for index in range(len(TILE_CHOICES)):
                path = work / f"choice{index}.onnx"
                TilePolicy.choosing(LAYOUT, index).to_onnx(path)
                choices.append(str(RunnerConfig(kind="onnx", argument=str(path))))
            # 1. Search: one row of TILE_CHOICES at a time, against the pass's own.
            search: Dict[str, List[dict]] = {
                m.name: [env.deploy(m.name, runner) for runner in choices] for m in env.modules
            }
            # 2. Fit on the nests of the training kernels only; a label is a
            # choice index, the pass's own sizes where one equals them.
            rows, labels, searched = [], [], {}
            for name, reports in search.items():
                nests = reports[0]["features"]
                default = nests[0]["default_tile_sizes"]
                same = [i for i, c in enumerate(TILE_CHOICES.tolist()) if c == default]
                best = max(range(len(choices)), key=lambda i: reports[i]["speedup"])
                if reports[best]["speedup"] < 1.0 / (1.0 - MARGIN) and same:
                    best = same[0]
                searched[name] = TILE_CHOICES[best].tolist()
                if kernels.split_of(name) == "train":
                    rows += nests
                    labels += [best] * len(nests)
            policy = TilePolicy.fit_indices(LAYOUT, rows, labels)
            policy.to_onnx(work / "policy.onnx")
            module = build_aot_module(work / "policy.onnx", work / "aot", "TilePolicy")
            # 3. Deploy the AOT-compiled policy on every kernel.
            aot = str(RunnerConfig(kind="aot", argument=str(module)))
            deployed = {m.name: env.deploy(m.name, aot) for m in env.modules}
        finally:
            env.close()
    results = []
    print(f"{'kernel':<30}{'split':>11}{'default ms':>11}{'model ms':>10}{'speedup':>9}  sizes")
    runner_us = opt_seconds = 0.0
    for name, report in deployed.items():
        split = kernels.split_of(name)
        runner_us += report["runner_us"]
        opt_seconds += report["compile_seconds"]
        result = {
            "kernel": name,
            "split": split,
            "default_ms": report["default_seconds"] * 1e3,
            "model_ms": report["seconds"] * 1e3,
            "speedup": report["speedup"],
            "searched": searched[name],
            "model_sizes": report["answers"],
            "search_speedup": [r["speedup"] for r in search[name]],
        }
        results.append(result)
        print(
            f"{name:<30}{split:>11}{result['default_ms']:>11.3f}{result['model_ms']:>10.3f}"
            f"{result['speedup']:>9.2f}  {searched[name]} -> {report['answers']}"
        )
    by_split = {s: _geomean([r["speedup"] for r in results if r["split"] == s]) for s in SPLITS}
    print(
        "geometric mean speedup over the pass's own sizes: "
        + ", ".join(f"{s} {v:.3f}" for s, v in by_split.items())
    )
    share = runner_us / 1e6 / opt_seconds
    print(
        f"the runner took {runner_us:.0f} us of {opt_seconds * 1e3:.0f} ms of mlir-opt "
        f"({share * 100:.3f}%)"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "kernels": results,
                    "geomean_speedup_by_split": by_split,
                    "runner_us": runner_us,
                    "mlir_opt_seconds": opt_seconds,
                    "weights": policy.weights.tolist(),
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

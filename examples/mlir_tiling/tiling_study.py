"""Tile sizes from a model in stock mlir-opt-19, measured (docs/mlir-plugin.md).

    python examples/mlir_tiling/tiling_study.py [--rounds N] [--json FILE]

1. Search: every kernel of mlbridge.mlir.kernels.suite() is tiled by the
   mlbridge-tile pass with each row of TILE_CHOICES (a constant policy run
   in-process by ONNX Runtime) and with the pass's own heuristic, lowered to
   LLVM and run under mlir-cpu-runner-19: the fastest of ``repeats`` calls
   inside the program, the fastest of ``rounds`` programs; the checksums of
   every tiling must equal the untiled kernel's.
2. Fit: each kernel's nests are labelled with its fastest choice (the
   heuristic's own sizes unless a choice is more than 3% faster) and a
   TilePolicy is fitted to the nests' features.
3. Deploy: the policy, compiled ahead of time (mlbridge-aot), decides in the
   pass; its programs and the heuristic's are run in alternation, per kernel.
   The pass's log gives the runner's time per decision, next to mlir-opt's
   whole run.
4. Held out: for each kernel, a policy fitted to the other kernels only
   chooses its sizes, and the search's time of that choice is compared with
   the heuristic's (leave-one-out, from the search's measurements).

The deployed policy is fitted on the very kernels it is measured on; the
held-out figures say how such a policy does on a kernel it has not seen.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from mlbridge.mlir import TILE_CHOICES, TilePolicy, kernels, read_tiling_log
from mlbridge.mlir.policy import LAYOUT
from mlbridge.native import mlir_plugin_path
from mlbridge.train.imitation import build_aot_module

#: How much faster than the heuristic's a choice must be to be preferred.
MARGIN = 0.03


def measure(tiled: Dict[str, Path], work: Path, rounds: int) -> Dict[str, Tuple[float, float]]:
    """Each tiled program's fastest time over ``rounds`` runs, in turn, and
    its checksum."""
    best: Dict[str, Tuple[float, float]] = {}
    for _ in range(rounds):
        for label, path in tiled.items():
            seconds, checksum = kernels.run(path, work)
            if label not in best or seconds < best[label][0]:
                best[label] = (seconds, checksum)
    return best


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="work directory (default: a temporary one)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every program")
    parser.add_argument("--repeats", type=int, default=5, help="kernel calls per program")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    kernels.tools()
    plugin = mlir_plugin_path()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        choice_models = []
        for index in range(len(TILE_CHOICES)):
            model = work / f"choice{index}.onnx"
            TilePolicy.choosing(LAYOUT, index).to_onnx(model)
            choice_models.append(model)
        rows: List[Dict] = []
        labels: List[int] = []
        owners: List[int] = []
        results: List[Dict] = []
        for kernel in kernels.suite():
            source = work / f"{kernel.name}.mlir"
            source.write_text(kernel.module(args.repeats))
            log = work / f"{kernel.name}.default.jsonl"
            log.unlink(missing_ok=True)
            tiled = {"default": work / f"{kernel.name}.default.tiled.mlir"}
            kernels.tile(source, tiled["default"], plugin, None, log)
            for index, model in enumerate(choice_models):
                tiled[str(index)] = work / f"{kernel.name}.{index}.tiled.mlir"
                kernels.tile(source, tiled[str(index)], plugin, f"onnx:{model}")
            search = measure(tiled, work, args.rounds)
            untiled = search["0"][1]
            for label, (_, checksum) in search.items():
                if not math.isclose(checksum, untiled, rel_tol=1e-4):
                    raise SystemExit(f"{kernel.name}: tiling {label} changed the result")
            default_seconds = search["default"][0]
            nests = read_tiling_log(log)
            default_sizes = nests[0]["tile_sizes"]
            same = [i for i, c in enumerate(TILE_CHOICES.tolist()) if c == default_sizes]
            best = min(range(len(TILE_CHOICES)), key=lambda i: search[str(i)][0])
            if search[str(best)][0] > default_seconds * (1 - MARGIN) and same:
                best = same[0]
            for nest in nests:
                rows.append(nest["features"])
                labels.append(best)
                owners.append(len(results))
            results.append(
                {
                    "kernel": kernel.name,
                    "search_by_index": [search[str(i)][0] for i in range(len(TILE_CHOICES))],
                    "search_default_s": default_seconds,
                    "default_sizes": default_sizes,
                    "default_ms": default_seconds * 1e3,
                    "search_ms": {
                        ",".join(map(str, TILE_CHOICES[i])): search[str(i)][0] * 1e3
                        for i in range(len(TILE_CHOICES))
                    },
                    "searched": TILE_CHOICES[best].tolist(),
                }
            )
        for k, result in enumerate(results):
            keep = [i for i, owner in enumerate(owners) if owner != k]
            held_out = TilePolicy.fit_indices(
                LAYOUT, [rows[i] for i in keep], [labels[i] for i in keep]
            )
            mine = [i for i, owner in enumerate(owners) if owner == k]
            index = held_out.choice_index(rows[mine[0]])
            result["held_out_sizes"] = TILE_CHOICES[index].tolist()
            result["held_out_speedup"] = (
                result["search_default_s"] / result["search_by_index"][index]
            )
        policy = TilePolicy.fit_indices(LAYOUT, rows, labels)
        policy.save(work / "policy.npz")
        policy.to_onnx(work / "policy.onnx")
        module = build_aot_module(work / "policy.onnx", work / "aot", "TilePolicy")
        runner_us, opt_seconds = 0.0, 0.0
        for result in results:
            name = result["kernel"]
            source = work / f"{name}.mlir"
            log = work / f"{name}.model.jsonl"
            log.unlink(missing_ok=True)
            start = time.perf_counter()
            kernels.tile(source, work / f"{name}.model.tiled.mlir", plugin, f"aot:{module}", log)
            opt_seconds += time.perf_counter() - start
            nests = read_tiling_log(log)
            runner_us += sum(n["runner_us"] for n in nests)
            result["model_sizes"] = [n["tile_sizes"] for n in nests]
            final = measure(
                {
                    "default": work / f"{name}.default.tiled.mlir",
                    "model": work / f"{name}.model.tiled.mlir",
                },
                work,
                args.rounds,
            )
            if not math.isclose(final["model"][1], final["default"][1], rel_tol=1e-4):
                raise SystemExit(f"{name}: the model's tiling changed the result")
            result["final_default_ms"] = final["default"][0] * 1e3
            result["model_ms"] = final["model"][0] * 1e3
            result["speedup"] = final["default"][0] / final["model"][0]
    geomean = math.exp(sum(math.log(r["speedup"]) for r in results) / len(results))
    held_out = math.exp(sum(math.log(r["held_out_speedup"]) for r in results) / len(results))
    print(
        f"{'kernel':<30}{'default ms':>11}{'model ms':>10}{'speedup':>9}{'held out':>9}"
        "  default -> model sizes (held out)"
    )
    for r in results:
        print(
            f"{r['kernel']:<30}{r['final_default_ms']:>11.3f}{r['model_ms']:>10.3f}"
            f"{r['speedup']:>9.2f}{r['held_out_speedup']:>9.2f}  {r['default_sizes']} -> "
            f"{r['model_sizes']} ({r['held_out_sizes']})"
        )
    print(f"held out (leave-one-out) geometric mean speedup {held_out:.3f}")
    share = runner_us / 1e6 / opt_seconds
    print(
        f"geometric mean speedup {geomean:.3f}; the runner took {runner_us:.0f} us of "
        f"{opt_seconds * 1e3:.0f} ms of mlir-opt ({share * 100:.3f}%)"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "kernels": results,
                    "geomean_speedup": geomean,
                    "held_out_geomean_speedup": held_out,
                    "runner_us": runner_us,
                    "mlir_opt_seconds": opt_seconds,
                    "weights": np.asarray(policy.weights).tolist(),
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

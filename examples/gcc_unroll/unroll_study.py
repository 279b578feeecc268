"""Unroll factors from a model in stock gcc-12, measured (docs/gcc-plugin.md).

    python examples/gcc_unroll/unroll_study.py [--out DIR] [--rounds N] [--json FILE]

1. Search: kernels.c is compiled with the mlbridge GCC plugin answering one
   constant factor for every loop (0: GCC decides, 1, 2, 4, 8), linked with
   harness.c (compiled without it), and run: each kernel's time per factor.
2. Fit: every loop of a kernel is labelled with the kernel's fastest factor
   (GCC's own unless another is more than 3% faster), and
   mlbridge.gcc.UnrollPolicy is fitted to the loops' features.
3. Deploy: the policy, written as ONNX and compiled ahead of time
   (mlbridge-aot), decides in the plugin; its build and GCC's are run in
   alternation and compared per kernel (time, checksum) and in .text size.

The policy is fitted on the very kernels it is measured on: the figures show
that decisions reach GCC and what they do, not how a policy generalises.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from mlbridge.gcc import FACTORS, UnrollPolicy, read_decision_log
from mlbridge.native import gcc_plugin_path
from mlbridge.train.imitation import build_aot_module

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "kernels.c"
HARNESS = HERE / "harness.c"
#: How much faster than GCC's own a factor must be to be preferred.
MARGIN = 0.03

Timing = Dict[str, Tuple[float, str]]


def build(out: Path, plugin: Path, runner: Optional[str]) -> Tuple[Path, int, Path]:
    """kernels.c with the plugin (``runner`` None: GCC decides) + harness.c:
    the program, the .text size of the kernels, and the decision log."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "decisions.jsonl"
    log.unlink(missing_ok=True)
    args = [f"-fplugin={plugin}", f"-fplugin-arg-mlbridge_gcc-log={log}"]
    if runner:
        args.append(f"-fplugin-arg-mlbridge_gcc-runner={runner}")
    obj = out / "kernels.o"
    run(["gcc-12", "-O2", "-c", str(KERNELS), "-o", str(obj), *args])
    program = out / "harness"
    run(["gcc-12", "-O2", str(HARNESS), str(obj), "-o", str(program)])
    size = run(["size", "-A", str(obj)]).split("\n")
    text = next(int(line.split()[1]) for line in size if line.startswith(".text"))
    return program, text, log


def run(command: List[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or "mlbridge:" in done.stderr:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return done.stdout


def timings(program: Path, calls: int) -> Timing:
    """Per kernel: nanoseconds per call (fastest batch) and checksum."""
    out = {}
    for line in run([str(program), str(calls), "5"]).splitlines():
        name, ns, checksum = line.split()
        out[name] = (float(ns), checksum)
    return out


def fastest(programs: Dict[str, Path], rounds: int, calls: int) -> Dict[str, Timing]:
    """Each program's best time per kernel over ``rounds`` runs, in turn."""
    best: Dict[str, Timing] = {}
    for _ in range(rounds):
        for label, program in programs.items():
            for kernel, (ns, checksum) in timings(program, calls).items():
                previous = best.setdefault(label, {}).get(kernel)
                if previous is not None and previous[1] != checksum:
                    raise SystemExit(f"{label}: {kernel}'s checksum changed between runs")
                if previous is None or ns < previous[0]:
                    best[label][kernel] = (ns, checksum)
    return best


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="build directory (default: a temporary one)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of every program")
    parser.add_argument("--calls", type=int, default=1000, help="calls of a kernel per batch")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    plugin = gcc_plugin_path()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        # 1. Search: one constant factor at a time.
        programs, logs, sizes = {}, {}, {}
        for factor in FACTORS:
            label = f"factor {factor}" if factor else "gcc"
            runner = f"constant:{factor}" if factor else None
            programs[label], sizes[label], logs[label] = build(out / str(factor), plugin, runner)
        search = fastest(programs, args.rounds, args.calls)
        gcc = search["gcc"]
        for label, timing in search.items():
            for kernel, (_, checksum) in timing.items():
                if checksum != gcc[kernel][1]:
                    raise SystemExit(f"{label} changed {kernel}'s result")
        labels = {}
        for kernel, (ns, _) in gcc.items():
            best, best_ns = 0, ns * (1 - MARGIN)
            for factor in FACTORS[1:]:
                if search[f"factor {factor}"][kernel][0] < best_ns:
                    best, best_ns = factor, search[f"factor {factor}"][kernel][0]
            labels[kernel] = best
        # 2. Fit on the loops of the kernels.
        loops = [d for d in read_decision_log(logs["gcc"]) if d["function"] in labels]
        policy = UnrollPolicy.fit(
            [d["features"] for d in loops], [labels[d["function"]] for d in loops]
        )
        policy.save(out / "policy.npz")
        policy.to_onnx(out / "policy.onnx")
        module = build_aot_module(out / "policy.onnx", out / "aot", "UnrollPolicy")
        # 3. Deploy the AOT-compiled policy; measure it against GCC's own.
        model_program, model_text, model_log = build(out / "model", plugin, f"aot:{module}")
        chosen: Dict[str, List[int]] = {}
        for d in read_decision_log(model_log):
            chosen.setdefault(d["function"], []).append(d["factor"])
        final = fastest({"gcc": programs["gcc"], "model": model_program}, args.rounds, args.calls)
    rows = []
    for kernel, (ns, checksum) in final["gcc"].items():
        model_ns, model_checksum = final["model"][kernel]
        if model_checksum != checksum:
            raise SystemExit(f"the model's build changed {kernel}'s result")
        rows.append(
            {
                "kernel": kernel,
                "gcc_ns": ns,
                "model_ns": model_ns,
                "speedup": ns / model_ns,
                "searched_factor": labels[kernel],
                "model_factors": chosen.get(kernel, []),
                "search_ns": {f: search[f"factor {f}" if f else "gcc"][kernel][0] for f in FACTORS},
            }
        )
    geomean = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows))
    print(f"{'kernel':<15}{'gcc ns':>10}{'model ns':>10}{'speedup':>9}  searched  model's factors")
    for r in rows:
        print(
            f"{r['kernel']:<15}{r['gcc_ns']:>10.1f}{r['model_ns']:>10.1f}{r['speedup']:>9.2f}"
            f"  {r['searched_factor']:>8}  {r['model_factors']}"
        )
    print(f"geometric mean speedup {geomean:.3f}; .text {sizes['gcc']} -> {model_text} bytes")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "kernels": rows,
                    "geomean_speedup": geomean,
                    "text_bytes": {"gcc": sizes["gcc"], "model": model_text},
                    "text_bytes_by_factor": sizes,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

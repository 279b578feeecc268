#!/usr/bin/env python3
"""What loading the inline-advisor plugin costs a compiler process.

    .venv/bin/python bench/plugin_load.py
    .venv/bin/python bench/plugin_load.py --rounds 31 --json out.json

A file of one small function is compiled by ``clang-19 -Oz -c`` plain, and
with the plugin under the runners ``default`` (LLVM's own decision through
the bridge), ``constant:0``, ``aot`` (a module compiled by mlbridge-aot) and
``onnx`` (ONNX Runtime), over and over, the configurations alternating
round by round. A file without call sites is compiled plain and with the
``onnx`` runner, lazy (the default: ONNX Runtime is never loaded, no
decision is asked) and ``load=eager``. Each compilation's CPU time (user + system, of clang and its
cc1 child) is read from the kernel; per configuration the median over the
rounds, and the extra over plain clang paired round by round (median and
range) are printed, with the date, the compiler and the CPU regime (this
process and its children pinned to CPU 0 unless ``--no-pin``).

The model is a small policy network over three of LLVM's inliner features,
so that the ``aot`` and ``onnx`` runners run a real model at each call
site.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

SOURCE = "static int f(int x) { return x * 3 + 1; }\nint g(int y) { return f(y) - f(y + 1); }\n"
#: A file without call sites: the inliner asks nothing, so the lazy onnx
#: runner never loads ONNX Runtime (load=eager does).
SOURCE_NO_CALL = "int g(int y) { return y * 3 + 1; }\n"
#: Configurations compiling SOURCE_NO_CALL (the rest compile SOURCE).
NO_CALL = ("plain, no call site", "onnx, no call site", "onnx eager, no call")


def _policy_onnx(path: Path) -> None:
    """A small inlining policy network (3 of LLVM's features -> 16 tanh
    units -> 2 logits -> argmax, seeded random weights), of operators
    both ONNX Runtime and mlbridge-aot run."""
    import numpy as np

    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(0)
    features = ("cost_estimate", "callee_basic_block_count", "callsite_height")
    n = helper.make_node
    nodes = [n("Cast", [f], [f"{f}_f"], to=TensorProto.FLOAT) for f in features]
    nodes += [
        n("Concat", [f"{f}_f" for f in features], ["x"], axis=0),
        n("Reshape", ["x", "row"], ["x2"]),
        n("Gemm", ["x2", "w1", "b1"], ["h"]),
        n("Tanh", ["h"], ["t"]),
        n("Gemm", ["t", "w2", "b2"], ["logits"]),
        n("ArgMax", ["logits"], ["inlining_decision"], axis=1, keepdims=0),
    ]
    weights = {
        "row": np.asarray([1, 3], np.int64),
        "w1": rng.normal(size=(3, 16)).astype(np.float32),
        "b1": np.zeros(16, np.float32),
        "w2": rng.normal(size=(16, 2)).astype(np.float32),
        "b2": np.zeros(2, np.float32),
    }
    graph = helper.make_graph(
        nodes,
        "plugin_load_policy",
        [helper.make_tensor_value_info(f, TensorProto.INT64, [1]) for f in features],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.INT64, [1])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, str(path))


def _configs(plugin: Path, work: Path) -> Dict[str, Optional[List[str]]]:
    """Configuration -> the plugin's options (None: plain clang)."""
    from mlbridge.aot.loadable import build_aot_module

    model = work / "policy.onnx"
    _policy_onnx(model)
    aot = build_aot_module(model, work / "aot", class_name="PluginLoadBench")

    def runner(*options: str) -> List[str]:
        flags = [f"-fpass-plugin={plugin}", f"-fplugin={plugin}"]
        for option in options:
            flags += ["-mllvm", option]
        return flags

    return {
        "plain clang-19 -Oz": None,
        "plugin, default": runner("-mlbridge-runner=default"),
        "plugin, constant:0": runner("-mlbridge-runner=constant:0"),
        "plugin, aot": runner("-mlbridge-runner=aot", f"-mlbridge-model={aot}"),
        "plugin, onnx": runner("-mlbridge-runner=onnx", f"-mlbridge-model={model}"),
        NO_CALL[0]: None,
        NO_CALL[1]: runner("-mlbridge-runner=onnx", f"-mlbridge-model={model}"),
        NO_CALL[2]: runner(f"-mlbridge-runner=onnx:{model},load=eager"),
    }


def _cpu_ms(command: Sequence[str]) -> float:
    """CPU milliseconds (user + system) of ``command`` and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1000 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--plugin", help="the plugin (default: mlbridge config --plugin)")
    parser.add_argument("--clang", default="clang-19")
    parser.add_argument("--no-pin", action="store_true", help="do not pin to CPU 0")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    from mlbridge.native import plugin_path

    plugin = Path(args.plugin) if args.plugin else plugin_path()
    if not args.no_pin:
        os.sched_setaffinity(0, {0})  # the compilers inherit it
    with tempfile.TemporaryDirectory(prefix="mlbridge-bench-plugin-") as tmp:
        work = Path(tmp)
        source = work / "one.c"
        source.write_text(SOURCE)
        no_call = work / "no_call.c"
        no_call.write_text(SOURCE_NO_CALL)
        configs = _configs(plugin, work)
        times: Dict[str, List[float]] = {name: [] for name in configs}
        for round_ in range(args.rounds + 1):  # the first round warms the caches
            for name, flags in configs.items():
                src = no_call if name in NO_CALL else source
                command = [args.clang, "-Oz", "-c", *(flags or []), str(src)]
                ms = _cpu_ms(command + ["-o", str(work / "one.o")])
                if round_:
                    times[name].append(ms)
    plain = times["plain clang-19 -Oz"]
    version = subprocess.run([args.clang, "--version"], capture_output=True, text=True)
    report = {
        "date": datetime.date.today().isoformat(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "compiler": version.stdout.splitlines()[0] if version.stdout else args.clang,
        "plugin": str(plugin),
        "regime": "unpinned" if args.no_pin else "pinned to CPU 0",
        "rounds": args.rounds,
        "configurations": [],
    }
    print(
        f"CPU of one compiler process on a one-function file, {report['date']}, "
        f"{report['compiler']}, {report['regime']}, {args.rounds} rounds"
    )
    print(f"  {'':<22} {'median ms':>10} {'extra ms: median [min..max]':>30}")
    print("  (the no-call rows: over plain on the file without call sites)")
    for name, values in times.items():
        base = times[NO_CALL[0]] if name in NO_CALL else plain
        extra = sorted(v - p for v, p in zip(values, base))
        row = {
            "name": name,
            "median_ms": round(statistics.median(values), 2),
            "median_extra_ms": round(statistics.median(extra), 2),
            "min_extra_ms": round(extra[0], 2),
            "max_extra_ms": round(extra[-1], 2),
        }
        report["configurations"].append(row)
        print(
            f"  {name:<22} {row['median_ms']:>10.1f} {row['median_extra_ms']:>12.1f} "
            f"[{row['min_extra_ms']:.1f}..{row['max_extra_ms']:.1f}]"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

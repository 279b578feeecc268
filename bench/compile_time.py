#!/usr/bin/env python3
"""Compile CPU of a deployed inlining model against plain ``clang-19 -Oz``,
on a build of many files and on large single files.

    .venv/bin/python bench/compile_time.py
    .venv/bin/python bench/compile_time.py --policy run/policy.onnx --rounds 5 --json out.json

Every program of the full corpus that ``scripts/setup`` fetches is compiled
source file by source file, one compiler process per file as a build runs
it, four ways: plain ``clang-19 -Oz -c``, and with the inline-advisor
plugin running the model AOT-compiled (``aot``) and under ONNX Runtime
(``onnx``; and ``onnx eager``, ``load=eager``: ONNX Runtime loaded by every
compiler process whether it asks the model or not). The configurations
alternate program by program for ``--rounds`` rounds; each program's
fastest round counts. Totals are given for the many-file part (lz4, xxHash
and Brotli: 37 files) and for the two amalgamations (zstd, sqlite3: one
large file each), with the ratio to plain ``-Oz``, and how many files ask
the model anything (the others never load ONNX Runtime: the onnx runner
loads it at its first evaluation).

The default model answers LLVM's own decision (an ONNX ``Identity`` of the
``inlining_default`` input), so that every configuration makes the same
code and the difference is what the bridge costs: the plugin, the model
at every call site, and LLVM's decision computed for it. ``--policy``
deploys a trained policy instead (``mlbridge train inlining`` writes
``policy.onnx``); its inlining differs, and so does the optimisation work.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

#: Programs compiled as one large file each; the rest is the many-file build.
AMALGAMATIONS = ("zstd", "sqlite3")


def _echo_llvm_onnx(path: Path) -> None:
    """inlining_decision = inlining_default (int64 [1])."""
    from onnx import TensorProto, helper, save

    spec = TensorProto.INT64
    graph = helper.make_graph(
        [helper.make_node("Identity", ["inlining_default"], ["inlining_decision"])],
        "echo_llvm",
        [helper.make_tensor_value_info("inlining_default", spec, [1])],
        [helper.make_tensor_value_info("inlining_decision", spec, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, str(path))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", help="an inlining policy.onnx (default: LLVM's decision)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpus", default=".cache/corpus", help="the fetched corpus")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    from mlbridge.corpus.fetched import fetched_programs
    from mlbridge.native import plugin_path
    from mlbridge.problems.inlining.deploy import CONFIGS as DEPLOYED
    from mlbridge.problems.inlining.deploy import deployment_plugins
    from mlbridge.problems.inlining.toolchain import Plugin, compile_program
    from mlbridge.runner_config import RunnerConfig

    # ONNX Runtime loaded by every compiler process, as before load=lazy.
    CONFIGS = (*DEPLOYED, "onnx eager")

    programs = fetched_programs(Path(args.corpus))
    best: Dict[str, Dict[str, Any]] = {p.name: {} for p in programs}
    with tempfile.TemporaryDirectory(prefix="mlbridge-bench-compile-") as tmp:
        work = Path(tmp)
        policy = Path(args.policy) if args.policy else work / "echo_llvm.onnx"
        if not args.policy:
            _echo_llvm_onnx(policy)
        plugins = deployment_plugins(plugin_path(), policy, work, "CompileTimePolicy")
        eager = RunnerConfig(kind="onnx", argument=str(policy), load="eager")
        plugins["onnx eager"] = Plugin(plugin_path(), eager.plugin_env())
        for _ in range(args.rounds):
            for program in programs:
                for name in CONFIGS:
                    out = work / "objects" / name / program.dirname
                    result = compile_program(program, out, plugins[name], jobs=1)
                    kept = best[program.name].get(name)
                    if kept is None or result.cpu_seconds < kept.cpu_seconds:
                        best[program.name][name] = result

    groups = {
        "many files": [p for p in programs if p.name not in AMALGAMATIONS],
        "large single files": [p for p in programs if p.name in AMALGAMATIONS],
    }
    report: Dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "policy": args.policy or "LLVM's decision (Identity of inlining_default)",
        "rounds": args.rounds,
        "groups": {},
        "programs": {
            p.name: {
                name: {"cpu_seconds": round(r.cpu_seconds, 4), "text_bytes": r.text_bytes}
                for name, r in best[p.name].items()
            }
            for p in programs
        },
    }
    print(
        f"Compile CPU, fastest of {args.rounds} rounds per program, {report['date']}; "
        f"model: {report['policy']}"
    )
    for group, members in groups.items():
        files = sum(len(p.sources) for p in members)
        cpu = {n: sum(best[p.name][n].cpu_seconds for p in members) for n in CONFIGS}
        text = {n: sum(best[p.name][n].text_bytes for p in members) for n in CONFIGS}
        deciding = sum(best[p.name]["aot"].deciding for p in members)
        row: Dict[str, Any] = {
            "programs": [p.name for p in members],
            "files": files,
            "files_asking_the_model": deciding,
        }
        for name in CONFIGS:
            row[name] = {
                "cpu_seconds": round(cpu[name], 3),
                "vs_oz": round(cpu[name] / cpu["-Oz"], 4) if cpu["-Oz"] else None,
                "text_bytes": text[name],
            }
        report["groups"][group] = row
        cells: List[str] = [
            f"{name} {cpu[name]:.2f} s ({cpu[name] / cpu['-Oz']:.3f}x)" for name in CONFIGS
        ]
        print(
            f"  {group} ({', '.join(row['programs'])}: {files} files, {deciding} asking "
            "the model): " + ", ".join(cells)
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

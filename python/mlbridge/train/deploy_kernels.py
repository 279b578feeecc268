"""A trained policy of a timed-kernel problem (GCC unrolling, MLIR tiling)
deployed in its plugin and measured.

The exported ONNX model runs in the plugin under ONNX Runtime (``onnx:``)
and compiled ahead of time to C++ (``aot:``, :mod:`mlbridge.aot`); each
kernel is built with each and with the compiler's own decisions, and run in
alternation (:meth:`mlbridge.gym.timed_kernels.TimedKernelEnv.deploy`).
Reported per kernel and per project: the fastest times, the speedup, the
compile time with and without the model; overall, the geometric mean of the
speedups.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from mlbridge.errors import MlbridgeError
from mlbridge.gym.modules import Module
from mlbridge.problems import resolve
from mlbridge.runner_config import RunnerConfig

#: Runners the model is deployed with, in the report's order.
RUNNERS = ("aot", "onnx")


def _geomean(values: Sequence[float]) -> Optional[float]:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def evaluate_with(
    environment: str,
    policy: Path,
    modules: Sequence[Module],
    work: Path,
    tool: Optional[Path],
    rounds: int = 5,
) -> Dict[str, Any]:
    """Deploys ``policy`` on ``modules`` (kernels) with the plugin of the
    environment class ``environment`` (entry point; ``tool``: that plugin,
    None: ``mlbridge config``); its report, with ``summary`` lines."""
    from mlbridge.aot.loadable import build_aot_module

    work.mkdir(parents=True, exist_ok=True)
    aot = build_aot_module(policy, work / "aot", "KernelPolicy")
    runners = {
        "aot": str(RunnerConfig(kind="aot", argument=str(aot))),
        "onnx": str(RunnerConfig(kind="onnx", argument=str(policy.resolve()))),
    }
    env = resolve(environment)(modules=list(modules), rounds=rounds, plugin=tool)
    rows: List[Dict[str, Any]] = []
    failures: Dict[str, str] = {}
    try:
        for module in env.modules:
            row: Dict[str, Any] = {"module": module.name, "project": module.program}
            try:
                for kind in RUNNERS:
                    row[kind] = env.deploy(module.name, runners[kind])
            except MlbridgeError as err:
                failures[module.name] = str(err)
                continue
            rows.append(row)
    finally:
        env.close()
    summary = [f"{len(rows)} kernels measured, {len(failures)} failed"]
    report: Dict[str, Any] = {"kernels": rows, "failures": failures}
    for kind in RUNNERS:
        speedups = [r[kind]["speedup"] for r in rows]
        by_project: Dict[str, List[float]] = {}
        for r in rows:
            by_project.setdefault(r["project"], []).append(r[kind]["speedup"])
        compile_ratio = _geomean(
            [r[kind]["compile_seconds"] / r[kind]["default_compile_seconds"] for r in rows]
        )
        report[kind] = {
            "geomean_speedup": _geomean(speedups),
            "by_project": {p: _geomean(v) for p, v in sorted(by_project.items())},
            "compile_time_ratio": compile_ratio,
        }
        if speedups:
            summary.append(
                f"{kind}: run time speedup over the compiler's own decisions, geometric "
                f"mean {report[kind]['geomean_speedup']:.4f}x; compile time "
                f"{compile_ratio:.3f}x"
            )
            summary += [
                f"  {p}: {v:.4f}x" for p, v in report[kind]["by_project"].items() if v is not None
            ]
    for name, why in failures.items():
        summary.append(f"failed: {name}: {why}")
    report["summary"] = summary
    return report

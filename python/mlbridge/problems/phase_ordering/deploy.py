"""The trained phase-ordering policy deployed as a pass-sequence chooser.

Each held-out module goes through ``mlbridge-phase-service --runner
onnx:policy.onnx --module IN -o OUT --max-steps N --stats FILE``: the service
computes the features, ONNX Runtime in the service picks each pass, no
search, and the statistics say whether the policy ran (or the service fell
back to ``default<Oz>``). The instruction counts (the module as loaded,
after ``default<Oz>``, after the policy's sequence) are read back through
the environment, which loads the written module in the same service.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from mlbridge.errors import MlbridgeError
from mlbridge.gym.modules import Module
from mlbridge.run_stats import read_run_stats
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import run_tool

#: Longest a deployment compilation may take.
DEPLOY_TIMEOUT = 600.0


def _counts(service: Path, modules: Sequence[Module]) -> Dict[str, Dict[str, int]]:
    """Module name -> its initial and -Oz instruction counts, read by loading
    each module in the phase-ordering environment."""
    from mlbridge.problems.phase_ordering.environment import PhaseOrderingEnv

    env = PhaseOrderingEnv(modules=list(modules), service=service)
    try:
        out = {}
        for module in modules:
            _, info = env.reset(options={"module": module.name})
            out[module.name] = {
                "initial": int(info["initial_instcount"]),
                "oz": int(info["baseline_instcount"]),
            }
        return out
    finally:
        env.close()


def evaluate_phase_ordering(
    policy: Path,
    modules: Sequence[Module],
    service: Path,
    work: Path,
    max_steps: int = 32,
) -> Dict[str, Any]:
    """Per module: instructions as loaded, after ``-Oz``, after the policy;
    the geometric mean of ``-Oz``/policy (> 1: the policy's code is smaller)."""
    work.mkdir(parents=True, exist_ok=True)
    deployed: List[Module] = []
    seconds: Dict[str, float] = {}
    for i, module in enumerate(modules):
        out = work / f"{i}.bc"
        command = [
            str(service),
            "--runner",
            str(RunnerConfig(kind="onnx", argument=str(policy))),
            "--module",
            str(module.bitcode),
            "-o",
            str(out),
            "--max-steps",
            str(max_steps),
            "--stats",
            str(work / f"{i}.stats.jsonl"),
        ]
        start = time.monotonic()
        run_tool(command, timeout=DEPLOY_TIMEOUT, what=f"{module.name}: {' '.join(command)}")
        seconds[module.name] = time.monotonic() - start
        records = read_run_stats(work / f"{i}.stats.jsonl")
        if len(records) != 1 or records[0].fallbacks:
            why = records[0].first_error if records else "the service wrote no statistics"
            raise MlbridgeError(f"{module.name}: the policy did not run: {why}")
        deployed.append(Module(f"deployed-{i}", out, module.program, module.split))
    before = _counts(service, modules)
    after = _counts(service, deployed)
    rows: List[Dict[str, Any]] = []
    ratios: List[float] = []
    for module, result in zip(modules, deployed):
        final = after[result.name]["initial"]
        row = {
            "module": module.name,
            "initial": before[module.name]["initial"],
            "oz": before[module.name]["oz"],
            "policy": final,
            "oz_over_policy": before[module.name]["oz"] / max(1, final),
            "seconds": round(seconds[module.name], 3),
        }
        rows.append(row)
        ratios.append(before[module.name]["oz"] / max(1, final))
    geomean = math.exp(sum(math.log(r) for r in ratios) / max(1, len(ratios)))
    return {
        "modules": rows,
        "max_steps": max_steps,
        "geomean_oz_over_policy": geomean,
        "summary": [
            f"{len(rows)} held-out modules: instructions -Oz/policy geometric mean "
            f"{geomean:.4f}x (> 1: smaller than -Oz)"
        ],
    }


def evaluate_trained(
    policy: Path,
    modules: Sequence[Module],
    work: Path,
    service: Optional[Path],
    llvm: Optional[int] = None,
) -> Dict[str, Any]:
    """:func:`evaluate_phase_ordering` as ``mlbridge train`` runs it: the
    service of ``mlbridge config --phase-service --llvm N`` unless given."""
    from mlbridge.native import phase_service_path

    service = service or phase_service_path(llvm=llvm)
    return evaluate_phase_ordering(policy, modules, service, work)

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
from mlbridge.gym.modules import Module, default_cache_dir
from mlbridge.llvm.versions import tools
from mlbridge.run_stats import read_run_stats
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import run_tool
from mlbridge.validation.build import Build

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


#: Actions a sequence policy applies per unit when deployed in a build.
SEQUENCE_STEPS = 32


def is_chooser(policy: Path) -> bool:
    """Whether ``policy`` is a per-module pipeline chooser (its metadata
    names its choices, :data:`.chooser.CHOICES_KEY`): one step per unit."""
    from mlbridge.problems.phase_ordering.chooser import CHOICES_KEY, policy_metadata

    return CHOICES_KEY in policy_metadata(policy)


def deployed_build(
    policy: Path, service: Optional[Path] = None, llvm: Optional[int] = None
) -> Build:
    """How ``mlbridge validate`` builds a program with ``policy`` deployed:
    the pipeline wrappers (``mlbridge wrap --runner onnx:POLICY``) around
    clang ``-Oz`` of LLVM ``llvm``, the policy choosing each unit's pipeline
    in the phase service (default: ``mlbridge config --phase-service``): one
    step for a chooser (:func:`is_chooser`), else up to
    :data:`SEQUENCE_STEPS` actions; with ``--no-baseline`` when the policy
    says it does not read ``baseline_instcount``. Where ``mlbridge-pipeline-clang``
    is built beside the service, the wrappers run it (the same steps in one
    process). A statistics record is appended
    per unit to the file ``$MLBRIDGE_PIPELINE_STATS`` names. The wrappers
    are written once per configuration into the cache
    (``wrappers/`` beside ``mlbridge.gym.modules.default_cache_dir()``)."""
    import hashlib

    from mlbridge.native import phase_service_path, pipeline_clang_path
    from mlbridge.problems.phase_ordering.chooser import reads_baseline
    from mlbridge.problems.phase_ordering.pipeline_wrapper import (
        STATS_VARIABLE,
        write_pipeline_wrappers,
    )

    compilers = tools(llvm)
    service = (service or phase_service_path(llvm=compilers.major)).resolve()
    # clang with the pipeline in process where it is built beside the service.
    driver = pipeline_clang_path(llvm=compilers.major)
    if driver is not None and driver.resolve().parent != service.parent:
        driver = None
    runner = str(RunnerConfig(kind="onnx", argument=str(policy.resolve())))
    steps = 1 if is_chooser(policy) else SEQUENCE_STEPS
    no_baseline = not reads_baseline(policy)
    key = "\0".join(
        [compilers.clang, compilers.clangxx, str(service), str(driver), runner, str(steps)]
        + [str(no_baseline)]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    directory = default_cache_dir().parent / "wrappers" / digest
    cc, cxx = write_pipeline_wrappers(
        directory,
        clang=compilers.clang,
        clangxx=compilers.clangxx,
        service=str(service),
        runner=runner,
        max_steps=steps,
        no_baseline=no_baseline,
        driver=None if driver is None else str(driver),
    )
    return Build(
        f"{compilers.clang} -Oz, pipeline by {policy.name}",
        (cc,),
        stats_variable=STATS_VARIABLE,
        cxx=cxx,
        # the wrappers, the service and its libraries (ONNX Runtime), the policy
        reads=(directory, service.parent.parent, policy.resolve()),
    )

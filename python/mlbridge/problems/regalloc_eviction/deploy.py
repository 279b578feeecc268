"""The trained eviction policy deployed in stock ``llc-19``.

LLVM 19 has no plugin hook for the eviction advisor, so a trained policy is
served over LLVM's own interactive protocol by ``mlbridge-interactive-host``
(C++, ``mlbridge config --interactive-host``): it starts ``llc-19`` in its
interactive mode and answers every question with the model, AOT-compiled to
C++ (``aot:``) and under ONNX Runtime (``onnx:``, when the host has it),
feeding NaN features as 0 as the environment observes them (``--finite``)
and refusing any answer the mask forbids (``--mask mask``). Each module's
allocated code is scored against the default advisor's
(:mod:`mlbridge.problems.regalloc_eviction.score`), and ``llc``'s wall time is measured
without a model and with each runner.
"""

from __future__ import annotations

import math
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from mlbridge.corpus.program import project_of
from mlbridge.errors import MlbridgeError
from mlbridge.gym.modules import Module
from mlbridge.llvm.versions import tools
from mlbridge.problems.regalloc_eviction import MASK
from mlbridge.problems.regalloc_eviction.score import (
    LLC,
    AllocationError,
    ScoreError,
    allocation_command,
    default_allocation,
)
from mlbridge.run_stats import read_run_stats
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import run_tool
from mlbridge.validation import Build

#: Longest one allocation may take.
DEPLOY_TIMEOUT = 600.0
#: Runners the model is deployed with, in the report's order.
RUNNERS = ("aot", "onnx")
#: The variable naming the file the interactive host appends its statistics
#: record to when no ``--stats`` is given.
HOST_STATS = "MLBRIDGE_HOST_STATS"


def host_command(host: Path, runner: RunnerConfig, *stats: str) -> List[str]:
    """The host answering eviction with ``runner`` (NaN features as 0, the
    mask enforced), up to the ``--`` before the compiler's command."""
    return [
        str(host),
        "--runner",
        str(runner),
        "--problem",
        "regalloc-eviction",
        "--finite",
        "--mask",
        MASK,
        "--timeout-ms",
        str(int(DEPLOY_TIMEOUT * 1000)),
        *stats,
        "--",
    ]


def _host_run(host: Path, runner: RunnerConfig, command: List[str], stats: Path) -> Dict[str, Any]:
    """``command`` (an llc) served by the host with ``runner``; its stats."""
    stats.unlink(missing_ok=True)
    start = time.monotonic()
    run_tool(
        [*host_command(host, runner, "--stats", str(stats)), *command],
        timeout=DEPLOY_TIMEOUT + 30,
        what=f"{runner.kind}: {host.name}",
        stdout=subprocess.DEVNULL,
    )
    seconds = time.monotonic() - start
    records = read_run_stats(stats)
    if len(records) != 1 or records[0].first_error is not None:
        raise MlbridgeError(f"{runner.kind}: the host reports {records!r}")
    return {
        "seconds": seconds,
        "decisions": records[0].decisions,
        "evaluate_seconds": records[0].details.get("evaluate_seconds"),
    }


def _plain_seconds(command: List[str]) -> float:
    """Wall seconds of ``command`` (llc with its default advisor)."""
    start = time.monotonic()
    run_tool(command, timeout=DEPLOY_TIMEOUT, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def evaluate_regalloc_eviction(
    policy: Path,
    modules: Sequence[Module],
    work: Path,
    host: Path,
    runners: Sequence[str] = RUNNERS,
    llc: str = LLC,
    opt_level: int = 2,
) -> Dict[str, Any]:
    """Per module: MLGO's regalloc score of the default advisor and of the
    policy, their ratio (< 1: the policy's allocation is cheaper), the
    questions answered and ``llc``'s wall time without a model and with
    each of ``runners``; per project and in total, the ratio of the summed
    scores. The runners' allocations must agree. A module whose default
    allocation cannot be measured is skipped, with why in ``skipped``."""
    from mlbridge.aot.loadable import build_aot_module

    work.mkdir(parents=True, exist_ok=True)
    configs: Dict[str, RunnerConfig] = {}
    for kind in runners:
        if kind == "aot":
            aot = build_aot_module(policy, work / "aot", class_name="EvictionPolicy")
            configs[kind] = RunnerConfig(kind="aot", argument=str(aot))
        else:
            configs[kind] = RunnerConfig(kind=kind, argument=str(policy))
    rows: List[Dict[str, Any]] = []
    skipped: Dict[str, str] = {}
    agree = True
    for i, module in enumerate(modules):
        try:
            default = default_allocation(
                llc, opt_level, module.bitcode, module.flags, work, DEPLOY_TIMEOUT
            )
        except AllocationError as err:
            skipped[module.name] = str(err)
            continue
        plain = work / f"{i}.default.mir"
        seconds = {
            "default": _plain_seconds(
                allocation_command(llc, opt_level, module.bitcode, module.flags, plain)
            )
        }
        plain.unlink(missing_ok=True)
        scores: Dict[str, float] = {}
        model_seconds: Dict[str, float] = {}
        texts: Dict[str, bytes] = {}
        decisions = 0
        for kind, config in configs.items():
            output = work / f"{i}.{kind}.mir"
            command = allocation_command(llc, opt_level, module.bitcode, module.flags, output)
            stats = _host_run(host, config, command, work / f"{i}.{kind}.stats.jsonl")
            try:
                scores[kind] = default.score_of(output).score()
                texts[kind] = output.read_bytes()
            except (ScoreError, OSError) as err:
                raise MlbridgeError(f"{module.name}: {err}") from None
            finally:
                output.unlink(missing_ok=True)
            seconds[kind] = stats["seconds"]
            model_seconds[kind] = float(stats["evaluate_seconds"])
            decisions = int(stats["decisions"])
        agree = agree and len(set(texts.values())) <= 1
        first = runners[0]
        base = default.score.score()
        rows.append(
            {
                "module": module.name,
                "project": project_of(module.program),
                "default_score": base,
                "policy_score": scores[first],
                "policy_over_default": _ratio(scores[first], base),
                "decisions": decisions,
                "seconds": {k: round(v, 4) for k, v in seconds.items()},
                "model_seconds": {k: round(v, 6) for k, v in model_seconds.items()},
            }
        )
    report = _report(rows, list(configs), agree)
    report["skipped"] = skipped
    if skipped:
        first = "; ".join(f"{n}: {why[:300]}" for n, why in list(skipped.items())[:3])
        report["summary"].append(
            f"{len(skipped)} modules skipped (the default allocation cannot be measured): {first}"
        )
    return report


def _geomean(ratios: Sequence[float]) -> float:
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else 1.0


def _report(rows: List[Dict[str, Any]], runners: List[str], agree: bool) -> Dict[str, Any]:
    """The modules' rows summed up. The headline is the geometric mean of the
    per-module ratios over the modules that asked: block frequencies make
    one module's score dwarf the others' (a loop nest's blocks weigh
    millions of entries), so summed scores would measure that module alone."""
    asked = [r for r in rows if r["decisions"] > 0]
    projects: Dict[str, Dict[str, float]] = {}
    for project in sorted({r["project"] for r in rows}):
        mine = [r for r in asked if r["project"] == project]
        projects[project] = {
            "modules_asking": len(mine),
            "geomean_policy_over_default": _geomean([r["policy_over_default"] for r in mine]),
            "default_score": sum(r["default_score"] for r in rows if r["project"] == project),
            "policy_score": sum(r["policy_score"] for r in rows if r["project"] == project),
        }
    geomean = _geomean([r["policy_over_default"] for r in asked])
    summed = _ratio(sum(r["policy_score"] for r in rows), sum(r["default_score"] for r in rows))
    worse = sum(1 for r in rows if r["policy_over_default"] > 1.0)
    better = sum(1 for r in rows if r["policy_over_default"] < 1.0)
    decisions = sum(r["decisions"] for r in rows)
    times = {k: sum(r["seconds"][k] for r in rows) for k in ["default", *runners]}
    model = {k: sum(r["model_seconds"][k] for r in rows) for k in runners}
    cost = ", ".join(
        f"{k} {times[k]:.2f} s ({_ratio(times[k], times['default']):.2f}x; the model "
        f"{1e6 * model[k] / max(decisions, 1):.1f} us per question)"
        for k in runners
    )
    return {
        "modules": rows,
        "projects": projects,
        "geomean_policy_over_default": geomean,
        "summed_policy_over_default": summed,
        "runners": runners,
        "runners_agree": agree,
        "seconds": times,
        "model_seconds": model,
        "summary": [
            f"{len(rows)} modules of {len(projects)} projects, {len(asked)} asking: regalloc "
            f"score policy/default geometric mean {geomean:.4f}x (< 1: cheaper allocation); "
            f"better on {better} modules, worse on {worse}",
            "per project: "
            + ", ".join(f"{p} {s['geomean_policy_over_default']:.4f}" for p, s in projects.items()),
            f"llc wall time for {decisions} questions: default {times['default']:.2f} s, "
            f"{cost}; the runners' allocations " + ("are identical" if agree else "DIFFER"),
        ],
    }


def _ratio(policy: float, default: float) -> float:
    return policy / default if default else 1.0


def evaluate_trained(
    policy: Path, modules: Sequence[Module], work: Path, host: Optional[Path]
) -> Dict[str, Any]:
    """:func:`evaluate_regalloc_eviction` as ``mlbridge train`` and
    ``mlbridge evaluate`` run it: the host of ``mlbridge config`` unless
    given; AOT, and ONNX Runtime when the installation has it."""
    from mlbridge.native import find_native, interactive_host_path

    if host is None:
        native = find_native()
        host = interactive_host_path()
        runners = [r for r in RUNNERS if r == "aot" or r in native.components]
    else:
        runners = list(RUNNERS)
    return evaluate_regalloc_eviction(policy, modules, work, host, runners)


def deployed_build(policy: Path, host: Optional[Path] = None, llvm: Optional[int] = None) -> Build:
    """How ``mlbridge validate`` builds a program with ``policy`` deployed:
    ``clang-19 -O2`` under the interactive host (default: ``mlbridge config
    --interactive-host``), which answers every eviction question of every
    compilation with the policy under ONNX Runtime (:func:`host_command`)
    and appends a statistics record
    per compiler command to the file ``$MLBRIDGE_HOST_STATS`` names."""
    from mlbridge.native import NativeError, find_native

    if llvm not in (None, 19):
        raise ValueError(f"regalloc-eviction deploys in LLVM 19 only, not {llvm}")
    if host is None:
        native = find_native()  # read once: the host and its components
        if "onnx" not in native.components:
            raise NativeError("the interactive host was installed without ONNX Runtime")
        host = native.require("interactive_host")
    compilers = tools(19)
    runner = RunnerConfig(kind="onnx", argument=str(policy.resolve()))
    return Build(
        f"{compilers.clang} -O2, eviction by {policy.name}",
        (compilers.clang, "-O2"),
        stats_variable=HOST_STATS,
        cxx=compilers.clangxx,
        # the host and its libraries (ONNX Runtime) beside it, and the policy
        reads=(host.resolve().parent.parent, policy.resolve()),
        launcher=tuple(host_command(host, runner)),
    )

"""The trained eviction policy deployed in stock ``llc-19``.

LLVM 19 has no plugin hook for the eviction advisor, so a trained policy is
served over LLVM's own interactive protocol: each held-out module is
allocated by ``llc-19`` in its interactive mode while mlbridge's pipe host
(:func:`mlbridge.llvm.run_compiler`) answers every question with the
exported ONNX model under ONNX Runtime, and the allocated code is scored
against the default advisor's (:mod:`mlbridge.llvm.allocation`). The model
masks illegal candidates itself; the host feeds it LLVM's tensors with NaN
read as 0, as the environment observes them, and checks every answer
against the mask before sending it.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from mlbridge.corpus.program import project_of
from mlbridge.errors import MlbridgeError
from mlbridge.gym.modules import Module
from mlbridge.llvm.allocation import LLC, allocation_command, default_allocation
from mlbridge.llvm.driver import run_compiler
from mlbridge.llvm.regalloc_score import ScoreError

#: Longest one allocation may take.
DEPLOY_TIMEOUT = 600.0


class FiniteFeatures:
    """A policy fed LLVM's tensors with NaN as 0 and infinities clamped to
    float32's range, as :class:`~mlbridge.gym.regalloc_eviction.RegallocEvictionEnv`
    observes them; forwards ``begin``."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def begin(self, session: Any) -> None:
        begin = getattr(self.policy, "begin", None)
        if callable(begin):
            begin(session)

    def __call__(self, features: Mapping[str, np.ndarray]) -> Any:
        limit = float(np.finfo(np.float32).max)
        clean = {
            name: np.nan_to_num(value, nan=0.0, posinf=limit, neginf=-limit)
            if np.issubdtype(np.asarray(value).dtype, np.floating)
            else value
            for name, value in features.items()
        }
        return self.policy(clean)


def evaluate_regalloc_eviction(
    policy: Path,
    modules: Sequence[Module],
    work: Path,
    llc: str = LLC,
    opt_level: int = 2,
) -> Dict[str, Any]:
    """Per module: MLGO's regalloc score of the default advisor and of the
    policy, their ratio (< 1: the policy's allocation is cheaper), the
    questions answered and the compile time of both; in total, the ratio of
    the summed scores."""
    from mlbridge.onnx_policy import OnnxPolicy

    work.mkdir(parents=True, exist_ok=True)
    served = FiniteFeatures(OnnxPolicy(str(policy)))
    rows: List[Dict[str, Any]] = []
    for i, module in enumerate(modules):
        default = default_allocation(
            llc, opt_level, module.bitcode, module.flags, work, DEPLOY_TIMEOUT
        )
        output = work / f"{i}.mir"
        with tempfile.TemporaryDirectory(prefix="channel-", dir=work) as channel:
            result = run_compiler(
                allocation_command(llc, opt_level, module.bitcode, module.flags, output),
                {"evict": served},
                timeout=DEPLOY_TIMEOUT,
                channel_dir=channel,
                stdout=subprocess.DEVNULL,
            )
        if not result.ok:
            raise MlbridgeError(
                f"{module.name}: {llc} with the policy failed: "
                f"{result.error or result.stderr.strip()[-1500:]}"
            )
        try:
            score = default.score_of(output).score()
        except ScoreError as err:
            raise MlbridgeError(f"{module.name}: {err}") from None
        finally:
            output.unlink(missing_ok=True)
        base = default.score.score()
        rows.append(
            {
                "module": module.name,
                "project": project_of(module.program),
                "default_score": base,
                "policy_score": score,
                "policy_over_default": _ratio(score, base),
                "decisions": result.decisions,
                "default_seconds": round(default.seconds, 3),
                "policy_seconds": round(result.wall_seconds, 3),
            }
        )
    projects: Dict[str, Dict[str, float]] = {}
    for row in rows:
        sums = projects.setdefault(row["project"], {"default_score": 0.0, "policy_score": 0.0})
        sums["default_score"] += row["default_score"]
        sums["policy_score"] += row["policy_score"]
    for sums in projects.values():
        sums["policy_over_default"] = _ratio(sums["policy_score"], sums["default_score"])
    ratio = _ratio(sum(r["policy_score"] for r in rows), sum(r["default_score"] for r in rows))
    worse = sum(1 for r in rows if r["policy_over_default"] > 1.0)
    better = sum(1 for r in rows if r["policy_over_default"] < 1.0)
    return {
        "modules": rows,
        "projects": projects,
        "policy_over_default": ratio,
        "summary": [
            f"{len(rows)} modules of {len(projects)} projects: regalloc score "
            f"policy/default {ratio:.4f}x (< 1: cheaper allocation); better on {better} "
            f"modules, worse on {worse}",
            "per project: "
            + ", ".join(f"{p} {s['policy_over_default']:.4f}" for p, s in sorted(projects.items())),
        ],
    }


def _ratio(policy: float, default: float) -> float:
    return policy / default if default else 1.0


def evaluate_trained(
    policy: Path, modules: Sequence[Module], work: Path, llc: Optional[Path]
) -> Dict[str, Any]:
    """:func:`evaluate_regalloc_eviction` as ``mlbridge train`` and
    ``mlbridge evaluate`` run it; the native tool is ``llc`` (default llc-19)."""
    return evaluate_regalloc_eviction(policy, modules, work, str(llc) if llc else LLC)

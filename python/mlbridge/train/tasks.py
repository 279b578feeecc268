"""What ``mlbridge train`` does with a problem of :mod:`mlbridge.problems`:
the workers' observation transform, the environment's arguments, the export
of a trained policy for the compiler, and its deployment."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from mlbridge.errors import MlbridgeError
from mlbridge.problems import PROBLEMS, Problem, get_problem, resolve
from mlbridge.problems.capabilities import (
    ActionMask,
    AnswerTable,
    CompilerDecision,
    Deferral,
    PluginFeatures,
)
from mlbridge.tensor_spec import TensorSpec
from mlbridge.train.export import Deference, export_policy
from mlbridge.train.features import SignedLogFeatures, kept_features
from mlbridge.train.masking import mask_indices

if TYPE_CHECKING:
    from mlbridge.gym.modules import Module

__all__ = [
    "TASKS",
    "Task",
    "action_mask",
    "env_kwargs",
    "evaluate",
    "export",
    "get_task",
    "seen_through_plugin",
    "wrapper",
]

#: The problems ``mlbridge train`` trains, by name (the registry itself).
TASKS: Dict[str, Problem] = PROBLEMS
#: A task is a problem.
Task = Problem
get_task = get_problem


def seen_through_plugin(problem: Problem, plugin_features: bool) -> Problem:
    """``problem`` as a run trains it: with ``plugin_features`` (the compiler
    asks through mlbridge's plugin), its ``plugin_features`` are no longer
    hidden; else ``problem`` itself. MlbridgeError when it has none."""
    if not plugin_features:
        return problem
    plugin = problem.get(PluginFeatures)
    if plugin is None:
        raise MlbridgeError(f"{problem.name} has no feature that only its plugin sends")
    hidden = tuple(h for h in problem.hidden if h not in plugin.names)
    others = tuple(c for c in problem.capabilities if c is not plugin)
    return replace(problem, hidden=hidden, capabilities=others)


def wrapper(problem: Problem) -> SignedLogFeatures:
    """The observation transform run in the workers: the problem's hidden
    features dropped, the rest signed-log scaled."""
    return SignedLogFeatures(problem.hidden)


def llvm_choice(problem: Problem, llvm: Optional[int]) -> Dict[str, Any]:
    """The keyword ``llvm`` of ``problem``'s environment and ``evaluate``
    for ``--llvm llvm``: none when not given or when the problem runs on one
    major only. ValueError when it cannot run on that major."""
    if llvm is None:
        return {}
    if llvm not in problem.llvm_majors:
        if not problem.llvm_majors:
            raise ValueError(f"{problem.name} does not run LLVM: --llvm is not for it")
        majors = ", ".join(map(str, problem.llvm_majors))
        raise ValueError(
            f"{problem.name} runs on LLVM {majors} only, not {llvm} (docs/llvm-versions.md)"
        )
    return {"llvm": llvm} if len(problem.llvm_majors) > 1 else {}


def env_kwargs(corpus: Optional[Path], split: str, extra: Mapping[str, Any]) -> Dict[str, Any]:
    """The environment's keyword arguments for a corpus and a split."""
    out: Dict[str, Any] = {"split": split, **extra}
    if corpus is not None:
        out["corpus"] = str(corpus)
    return out


def deployed_inputs(
    problem: Problem, names: Sequence[str]
) -> Tuple[List[TensorSpec], Optional[List[int]]]:
    """The inputs of ``problem``'s deployed model over the environment's raw
    feature ``names``, and where the policy's features are in them (None:
    the inputs are the policy's features, in order)."""
    kept = kept_features(names, problem.hidden)
    inputs: List[TensorSpec]
    inputs, keep = resolve(problem.deploy_inputs)(names, kept)
    given = sum(spec.element_count for spec in inputs)
    if keep is not None and given != len(names):
        raise ValueError(
            f"{problem.name}: the deployed model's inputs hold {given} values, "
            f"the observation {len(names)} features: the compiler's features and "
            "the environment's differ"
        )
    return inputs, keep


def export(
    problem: Problem, policy: Any, path: Path, names: Sequence[str], deference: float = 0.0
) -> None:
    """Writes the SB3 ``policy`` as the deployable ONNX model at ``path``;
    ``names`` are the environment's raw feature names; ``deference``, the
    bonus of the compiler's own action (0: none)."""
    inputs, keep = deployed_inputs(problem, names)
    when = None
    deferral = problem.get(Deferral)
    if deferral is not None:
        # The flag comes last, read by the deference only.
        when = sum(spec.element_count for spec in inputs)
        if keep is None:
            keep = list(range(when))
        inputs = [*inputs, TensorSpec(deferral.when, "int64_t", (1,))]
    table = problem.get(AnswerTable)
    export_policy(
        policy,
        path,
        inputs,
        problem.output,
        keep,
        action_mask(problem, policy, names),
        None if table is None else table.answers,
        _deference(problem, inputs, deference, when) if deference or when is not None else None,
    )


def _deference(
    problem: Problem, inputs: Sequence[TensorSpec], bonus: float, when: Optional[int]
) -> Deference:
    """The deference of ``bonus`` to the compiler's own action: the
    problem's warm-start feature, among the deployed ``inputs``; ``when``,
    where its flag is in them (None: none)."""
    decision = problem.get(CompilerDecision)
    feature = None if decision is None else decision.feature
    where = next((i for i, spec in enumerate(inputs) if spec.name == feature), None)
    if feature is None or where is None or inputs[where].element_count != 1:
        raise MlbridgeError(
            f"{problem.name}: a deference needs the compiler's own action as a deployed input"
        )
    return Deference(sum(spec.element_count for spec in inputs[:where]), bonus, when)


def action_mask(problem: Problem, policy: Any, names: Sequence[str]) -> Optional[List[int]]:
    """Where the problem's action mask is in what the policy sees (the kept
    features of ``names``); None when it has none."""
    mask = problem.get(ActionMask)
    if mask is None:
        return None
    kept = [names[i] for i in kept_features(names, problem.hidden)]
    return mask_indices(kept, mask.feature, int(policy.action_space.n))


def evaluate(
    problem: Problem,
    policy: Path,
    modules: Sequence["Module"],
    work: Path,
    tool: Optional[Path],
    llvm: Optional[int] = None,
) -> Dict[str, Any]:
    """Deploys ``policy`` on ``modules`` and measures it (the problem's
    ``evaluate``); ``tool`` is its native half (None: ``mlbridge config``),
    ``llvm`` the LLVM major (:func:`llvm_choice`)."""
    if problem.evaluate is None:
        raise ValueError(f"the problem {problem.name} has no deployment to measure")
    kwargs = llvm_choice(problem, llvm)
    report: Dict[str, Any] = resolve(problem.evaluate)(policy, modules, work, tool, **kwargs)
    return report

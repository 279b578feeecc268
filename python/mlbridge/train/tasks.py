"""The tasks ``mlbridge train`` knows: which environment, what the policy
sees of it, and how the trained policy is exported for the compiler."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from mlbridge.tensor_spec import TensorSpec
from mlbridge.train.export import export_policy
from mlbridge.train.features import SignedLogFeatures, kept_features

if TYPE_CHECKING:
    from mlbridge.gym.modules import Module

#: Inliner features a policy does not see: LLVM 19 overwrites
#: callee_basic_block_count with its own decision in training (pitfall #1,
#: so it would differ in deployment), and the module-wide node/edge counts
#: say more about the module than about the call site.
INLINING_DROP = ("callee_basic_block_count", "node_count", "edge_count")


#: Raw feature names, kept indices -> (deployed input specs, kept indices
#: in the concatenated inputs or None when the inputs are the kept features).
DeployInputs = Callable[[Sequence[str], List[int]], Tuple[List[TensorSpec], Optional[List[int]]]]


@dataclass(frozen=True)
class Task:
    """One training task.

    ``deploy_inputs(names)`` gives the runner's input specs of the deployed
    model and the indices of the kept features in the concatenation of
    those inputs (None: the inputs are exactly the kept features).
    """

    name: str
    env_id: str
    drop: Tuple[str, ...]
    output: str
    deploy_inputs: DeployInputs
    description: str = ""
    #: A feature the actor imitates before PPO (None: no warm start).
    warm_start_feature: Optional[str] = None
    #: Deploys the exported policy on held-out modules and measures it:
    #: (policy.onnx, modules, work directory, native tool or None) -> report
    #: with a "summary" (lines to print).
    evaluate: Optional[
        Callable[[Path, Sequence["Module"], Path, Optional[Path]], Dict[str, Any]]
    ] = None
    #: PPO's discount and GAE lambda (a sparse end-of-episode reward wants 1).
    gamma: float = 0.99
    gae_lambda: float = 0.95

    @property
    def wrapper(self) -> SignedLogFeatures:
        """The observation transform run in the workers."""
        return SignedLogFeatures(self.drop)

    def env_kwargs(
        self, corpus: Optional[Path], split: str, extra: Mapping[str, Any]
    ) -> Dict[str, Any]:
        """The environment's keyword arguments for a corpus and a split."""
        out: Dict[str, Any] = {"split": split, **extra}
        if corpus is not None:
            out["corpus"] = str(corpus)
        return out

    def export(self, policy: Any, path: Path, names: Sequence[str]) -> None:
        """Writes the SB3 ``policy`` as the deployable ONNX model at ``path``;
        ``names`` are the environment's raw feature names."""
        kept = kept_features(names, self.drop)
        inputs, keep = self.deploy_inputs(names, kept)
        export_policy(policy, path, inputs, self.output, keep)


def _evaluate_inlining(
    policy: Path, modules: Sequence["Module"], work: Path, plugin: Optional[Path]
) -> Dict[str, Any]:
    from mlbridge.native import plugin_path
    from mlbridge.train.deploy_inlining import evaluate_inlining

    return evaluate_inlining(policy, modules, plugin or plugin_path(), work, repeats=3)


def _evaluate_phase_ordering(
    policy: Path, modules: Sequence["Module"], work: Path, service: Optional[Path]
) -> Dict[str, Any]:
    from mlbridge.native import phase_service_path
    from mlbridge.train.deploy_phase_ordering import evaluate_phase_ordering

    return evaluate_phase_ordering(policy, modules, service or phase_service_path(), work)


def _phase_inputs(
    names: Sequence[str], kept: List[int]
) -> Tuple[List[TensorSpec], Optional[List[int]]]:
    # The service feeds a deployed model the same tensors as in training,
    # whose concatenation is the environment's observation.
    from mlbridge.gym.phase_ordering import describe_service
    from mlbridge.native import phase_service_path

    specs = describe_service(phase_service_path())["inputs"]
    inputs = [TensorSpec(s["name"], s["type"], tuple(s["shape"])) for s in specs]
    if sum(s.element_count for s in inputs) != len(names):
        raise ValueError("the service's inputs do not match the observation")
    return inputs, kept


def _inlining_inputs(
    names: Sequence[str], kept: List[int]
) -> Tuple[List[TensorSpec], Optional[List[int]]]:
    # The plugin feeds a model the features it declares, by LLVM's names.
    return [TensorSpec(names[i], "int64_t", (1,)) for i in kept], None


TASKS: Dict[str, Task] = {
    "inlining": Task(
        "inlining",
        "mlbridge/Inlining-v0",
        INLINING_DROP,
        "inlining_decision",
        _inlining_inputs,
        "inline or not at each call site (clang-19 -Oz), reward: .text vs -Oz",
        warm_start_feature="inlining_default",
        evaluate=_evaluate_inlining,
        gamma=1.0,
        gae_lambda=1.0,
    ),
    "phase-ordering": Task(
        "phase-ordering",
        "mlbridge/PhaseOrdering-v0",
        ("status", "module"),
        "action",
        _phase_inputs,
        "one pass (or sub-sequence) per step of mlbridge-phase-service, "
        "reward: IR instructions vs -Oz",
        evaluate=_evaluate_phase_ordering,
    ),
}


def get_task(name: str) -> Task:
    """The task called ``name``."""
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r} (one of {', '.join(TASKS)})") from None

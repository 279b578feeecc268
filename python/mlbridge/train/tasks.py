"""The tasks ``mlbridge train`` knows: which environment, what the policy
sees of it, and how the trained policy is exported for the compiler."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from mlbridge.tensor_spec import TensorSpec
from mlbridge.train.export import export_policy
from mlbridge.train.features import SignedLogFeatures, kept_features

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
        gamma=1.0,
        gae_lambda=1.0,
    ),
}


def get_task(name: str) -> Task:
    """The task called ``name``."""
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r} (one of {', '.join(TASKS)})") from None

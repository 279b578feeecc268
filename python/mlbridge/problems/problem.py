"""One optimisation problem's declaration (see :mod:`mlbridge.problems`):
a small base every problem fills in, and the capabilities some problems
compose (:mod:`mlbridge.problems.capabilities`)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple, Type, TypeVar, Union

from mlbridge.problems.capabilities import (
    CAPABILITIES,
    Capability,
    CompilerDecision,
    Deferral,
    PluginFeatures,
    Trainer,
)
from mlbridge.tensor_spec import TensorSpec

#: Raw feature names, kept indices -> (deployed input specs, kept indices in
#: the concatenated inputs or None when the inputs are the kept features).
DeployInputs = Callable[[Sequence[str], List[int]], Tuple[List[TensorSpec], Optional[List[int]]]]
#: A callable, or the entry point ``"module:attribute"`` naming one.
EntryPoint = Union[str, Callable[..., Any]]

C = TypeVar("C", bound=Capability)


def resolve(entry_point: EntryPoint) -> Any:
    """The object an entry point names (a callable is its own)."""
    if not isinstance(entry_point, str):
        return entry_point
    module, colon, attribute = entry_point.partition(":")
    if not colon or not module or not attribute:
        raise ValueError(f"an entry point is 'module:attribute', got {entry_point!r}")
    return getattr(importlib.import_module(module), attribute)


def int64_scalars(
    names: Sequence[str], kept: List[int]
) -> Tuple[List[TensorSpec], Optional[List[int]]]:
    """The default deployed inputs: each feature the policy sees as one
    int64 scalar ``[1]``, by the environment's name for it."""
    return [TensorSpec(names[i], "int64_t", (1,)) for i in kept], None


@dataclass(frozen=True)
class TensorInputs:
    """Deployed inputs that are the tensors the compiler feeds a model, as
    it feeds them (a :data:`DeployInputs`): their concatenation is the
    environment's observation (``mlbridge.train.tasks.deployed_inputs``
    checks it), and ``kept`` indexes that concatenation."""

    specs: Tuple[TensorSpec, ...]

    def __call__(
        self, names: Sequence[str], kept: List[int]
    ) -> Tuple[List[TensorSpec], Optional[List[int]]]:
        return list(self.specs), kept


@dataclass(frozen=True)
class Problem:
    """One optimisation problem: what every problem has, and its
    capabilities (see the package's docstring)."""

    name: str
    #: Its gymnasium id (``namespace/Name-vN``).
    env_id: str
    #: The gymnasium environment class (entry point); its keyword arguments
    #: are the environment's own (docs/gym.md).
    environment: str
    #: The deployed model's output tensor.
    output: str
    #: One line for ``mlbridge train --help``: the decision and the reward.
    description: str
    #: The features the environment observes that a policy does not see.
    hidden: Tuple[str, ...] = ()
    #: :data:`DeployInputs` (entry point): the deployed model's inputs.
    deploy_inputs: EntryPoint = int64_scalars
    #: Deploys an exported policy on held-out modules and measures it
    #: (entry point): (policy.onnx, modules, work directory, native tool or
    #: None) -> report with a "summary" (lines to print). None: no deployment.
    evaluate: Optional[EntryPoint] = None
    #: The LLVM majors its compiler can be (docs/llvm-versions.md), empty
    #: for a problem of another compiler. With several, ``--llvm N`` of
    #: ``mlbridge train|evaluate`` reaches the environment and ``evaluate``
    #: as their keyword ``llvm``.
    llvm_majors: Tuple[int, ...] = ()
    #: PPO's discount and GAE lambda (a sparse end-of-episode reward wants 1).
    gamma: float = 0.99
    gae_lambda: float = 0.95
    #: What some problems have (:mod:`mlbridge.problems.capabilities`), at
    #: most one of each kind but :class:`Trainer`.
    capabilities: Tuple[Capability, ...] = ()

    def __post_init__(self) -> None:
        kinds = [type(c) for c in self.capabilities]
        for kind in kinds:
            if kind not in CAPABILITIES:
                raise ValueError(f"{self.name}: {kind.__name__} is not a capability")
            if kind is not Trainer and kinds.count(kind) > 1:
                raise ValueError(f"{self.name}: two {kind.__name__} capabilities")
        methods = [t.method for t in self.all(Trainer)]
        if "ppo" in methods or len(set(methods)) != len(methods):
            raise ValueError(f"{self.name}: trainers have distinct names other than ppo")
        plugin = self.get(PluginFeatures)
        if plugin is not None and not set(plugin.names) <= set(self.hidden):
            raise ValueError(f"{self.name}: plugin features are among the hidden features")
        if self.get(Deferral) is not None and self.get(CompilerDecision) is None:
            raise ValueError(f"{self.name}: deferring needs the compiler's decision as a feature")

    def get(self, kind: Type[C]) -> Optional[C]:
        """The problem's capability of ``kind``, None when it has none."""
        return next((c for c in self.capabilities if isinstance(c, kind)), None)

    def all(self, kind: Type[C]) -> List[C]:
        """Every capability of ``kind`` the problem has."""
        return [c for c in self.capabilities if isinstance(c, kind)]

    def methods(self) -> Tuple[str, ...]:
        """How ``mlbridge train`` may train it: PPO, then its own trainers."""
        return ("ppo", *(t.method for t in self.all(Trainer)))

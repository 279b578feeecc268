"""One optimisation problem's declaration (see :mod:`mlbridge.problems`)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from mlbridge.tensor_spec import TensorSpec

#: Raw feature names, kept indices -> (deployed input specs, kept indices in
#: the concatenated inputs or None when the inputs are the kept features).
DeployInputs = Callable[[Sequence[str], List[int]], Tuple[List[TensorSpec], Optional[List[int]]]]
#: What one action answers the compiler: a number, a row of numbers, or the
#: name of an input whose value the answer copies (the compiler's own decision).
Answer = Union[int, Tuple[int, ...], str]
#: A callable, or the entry point ``"module:attribute"`` naming one.
EntryPoint = Union[str, Callable[..., Any]]

#: How a problem's compiler lives: one compiler process per episode, or a
#: long-lived service that loads module after module.
SESSIONS = ("compiler-per-episode", "service")


def resolve(entry_point: EntryPoint) -> Any:
    """The object an entry point names (a callable is its own)."""
    if not isinstance(entry_point, str):
        return entry_point
    module, colon, attribute = entry_point.partition(":")
    if not colon or not module or not attribute:
        raise ValueError(f"an entry point is 'module:attribute', got {entry_point!r}")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Problem:
    """One optimisation problem (see the package's docstring)."""

    name: str
    env_id: str
    #: The gymnasium environment class (entry point).
    environment: str
    #: The features the environment observes that a policy does not see.
    hidden: Tuple[str, ...]
    #: The deployed model's output tensor.
    output: str
    #: :data:`DeployInputs` (entry point).
    deploy_inputs: EntryPoint
    description: str = ""
    session: str = "compiler-per-episode"
    #: A feature the actor imitates before PPO (None: no warm start).
    warm_start_feature: Optional[str] = None
    #: A 0/1 input of the deployed model only (the policy never sees it):
    #: where it is 1, the model answers the compiler's own action (the
    #: ``warm_start_feature``) whatever the policy says. None: no such input.
    #: The environment takes it as its keyword ``defers_when``: the compiler
    #: then gives its own action there without asking, and training sees
    #: the decisions the deployed model makes (``TrainConfig.defer_in_training``).
    defers_when: Optional[str] = None
    #: Hidden features that the environment observes as the deployed model
    #: reads them only with its keyword ``through_plugin`` (the compiler asks
    #: through mlbridge's plugin): a run with
    #: ``TrainConfig.plugin_features`` trains that way and shows them to the
    #: policy.
    plugin_features: Tuple[str, ...] = ()
    #: Or a heuristic the actor imitates before PPO, where the compiler's
    #: own decision is not observable (entry point): the names of the
    #: features a policy sees -> a picklable ``observation -> action``
    #: over them (signed-log scaled, which keeps order and zeros).
    warm_start_policy: Optional[EntryPoint] = None
    #: The features saying which actions are legal (``NAME[i]`` non-zero:
    #: action i is legal), masked in training and in the deployed model
    #: (:mod:`mlbridge.train.masking`); None: every action is always legal.
    action_mask: Optional[str] = None
    #: Deploys an exported policy on held-out modules and measures it
    #: (entry point): (policy.onnx, modules, work directory, native tool or
    #: None) -> report with a "summary" (lines to print). None: no deployment.
    evaluate: Optional[EntryPoint] = None
    #: Measures exported policies on a corpus's validation programs during
    #: PPO (entry point): (programs, run directory, compilations at once,
    #: native tool or None, LLVM major or None, programs per validation
    #: project, seed) -> ``policy.onnx -> (ratio to the compiler's own
    #: heuristic, ratio per project)``, or None when the programs hold no
    #: validation program (:mod:`mlbridge.train.ppo_validation`).
    validate: Optional[EntryPoint] = None
    #: The modules are optimised by clang -O2 (for problems of the back
    #: end) instead of made ready for a size pipeline (clang -Oz, no pass run).
    optimized_modules: bool = False
    #: What each action answers, when the answer is not the action's index
    #: (a table the deployed model indexes: :data:`Answer`); None: the index.
    answers: Optional[Tuple[Answer, ...]] = None
    #: The action that keeps the compiler's own decision, where one does
    #: (None: the environment's ``baseline_action()`` reads it per step).
    baseline_action: Optional[int] = None
    #: The problem's own kernel suite instead of a corpus of programs (entry
    #: point): (split, directory to write them in) -> modules.
    suite: Optional[EntryPoint] = None
    #: How ``mlbridge train`` may train it: ``ppo``, and ``search``
    #: (imitation of per-unit search, :mod:`mlbridge.train.inlining_size`).
    methods: Tuple[str, ...] = ("ppo",)
    #: The LLVM majors its compiler can be (docs/llvm-versions.md), empty
    #: for a problem of another compiler. With several, ``--llvm N`` of
    #: ``mlbridge train|evaluate`` reaches the environment and ``evaluate``
    #: as their keyword ``llvm``.
    llvm_majors: Tuple[int, ...] = ()
    #: PPO's discount and GAE lambda (a sparse end-of-episode reward wants 1).
    gamma: float = 0.99
    gae_lambda: float = 0.95

    def __post_init__(self) -> None:
        if self.session not in SESSIONS:
            raise ValueError(f"session must be one of {SESSIONS}, got {self.session!r}")
        if not self.methods or not set(self.methods) <= {"ppo", "search"}:
            raise ValueError(f"methods are ppo and search, got {self.methods!r}")
        if not set(self.plugin_features) <= set(self.hidden):
            raise ValueError("plugin_features are among the hidden features")
        if self.answers is not None and not self.answers:
            raise ValueError("answers, when given, name at least one answer")
        actions = None if self.answers is None else len(self.answers)
        if self.baseline_action is not None and actions and not 0 <= self.baseline_action < actions:
            raise ValueError(f"baseline_action {self.baseline_action} is not an action")

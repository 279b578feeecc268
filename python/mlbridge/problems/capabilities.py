"""What some problems have and others do not, each one small piece a
:class:`~mlbridge.problems.Problem` composes (``capabilities=(...)``) and
the shared cores (environment base, PPO, export, evaluation) read with
``problem.get(Kind)``. A problem with none of them is trained by PPO on a
corpus, warm-started by nothing, and exported with every action legal and
answered by its index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple, Union

#: What one action answers the compiler: a number, a row of numbers, or the
#: name of an input whose value the answer copies (the compiler's own decision).
Answer = Union[int, Tuple[int, ...], str]
#: A callable, or the entry point ``"module:attribute"`` naming one.
_EntryPoint = Union[str, Callable[..., Any]]


@dataclass(frozen=True)
class Capability:
    """The base of every capability."""


@dataclass(frozen=True)
class ActionMask(Capability):
    """Not every action is always legal: the feature ``NAME[i]`` non-zero
    says action ``i`` is, masked in training and in the deployed model
    (:mod:`mlbridge.train.masking`)."""

    feature: str


@dataclass(frozen=True)
class AnswerTable(Capability):
    """What each action answers the compiler, when not the action's index
    (a table the deployed model indexes), and the action that keeps the
    compiler's own decision (the warm start's and the environment's
    ``baseline_action()``)."""

    answers: Tuple[Answer, ...]
    keeps_default: int

    def __post_init__(self) -> None:
        if not self.answers:
            raise ValueError("an answer table names at least one answer")
        if not 0 <= self.keeps_default < len(self.answers):
            raise ValueError(f"action {self.keeps_default} is not an answer of the table")


@dataclass(frozen=True)
class CompilerDecision(Capability):
    """The compiler's own decision is a feature the policy sees: the actor
    imitates it before PPO, and a deployed model can defer to it
    (``mlbridge train --deference``)."""

    feature: str


@dataclass(frozen=True)
class Deferral(Capability):
    """A 0/1 input of the deployed model only (the policy never sees it):
    where it is 1, the model answers the compiler's own decision (its
    :class:`CompilerDecision`) whatever the policy says. The environment
    takes it as its keyword ``defers_when``: the compiler then gives its own
    decision there without asking, and training sees the decisions the
    deployed model makes (``mlbridge train --defer-in-training``)."""

    when: str


@dataclass(frozen=True)
class PluginFeatures(Capability):
    """Hidden features that the environment observes as the deployed model
    reads them only with its keyword ``through_plugin`` (the compiler asks
    through mlbridge's plugin): ``mlbridge train --plugin-features`` trains
    that way and shows them to the policy."""

    names: Tuple[str, ...]


@dataclass(frozen=True)
class Heuristic(Capability):
    """A heuristic the actor imitates before PPO, where the compiler's own
    decision is not observable (entry point): the names of the features a
    policy sees -> a picklable ``observation -> action`` over them
    (signed-log scaled, which keeps order and zeros)."""

    make: _EntryPoint


@dataclass(frozen=True)
class KernelSuite(Capability):
    """The problem runs on its own kernel suite, not on a corpus (entry
    point): (split, directory to write them in) -> modules."""

    modules: _EntryPoint


@dataclass(frozen=True)
class OptimizedModules(Capability):
    """Its modules are optimised by clang -O2 (a problem of the back end)
    instead of made ready for a size pipeline (clang -Oz, no pass run)."""


@dataclass(frozen=True)
class Validation(Capability):
    """Measures exported policies on a corpus's validation programs during
    PPO (entry point): (programs, run directory, compilations at once,
    native tool or None, LLVM major or None, programs per validation
    project, seed) -> ``policy.onnx -> (ratio to the compiler's own
    heuristic, ratio per project)``, or None when the programs hold no
    validation program (:mod:`mlbridge.train.ppo_validation`)."""

    measure: _EntryPoint


@dataclass(frozen=True)
class Trainer(Capability):
    """A way ``mlbridge train --method METHOD`` trains the problem besides
    PPO. ``train`` (entry point): (the parsed ``mlbridge train`` arguments,
    the run directory) -> the policy written as ``policy.onnx`` there, and
    None, or a deployment report (``summary`` lines) when the trainer
    deployed and measured the policy on the held-out programs itself.
    ``options`` (entry point, None: none): (an argparse argument
    group, the parser of whole numbers >= 0) -> the destinations of the
    options it added (one given with another method is a usage error).
    ``summary``: what the method does, for ``--help``."""

    method: str
    train: _EntryPoint
    summary: str
    options: Optional[_EntryPoint] = None


@dataclass(frozen=True)
class DeployedBuild(Capability):
    """How a program is built with the problem's policy deployed, for the
    differential check of ``mlbridge validate`` (docs/validation.md; entry
    point): (policy.onnx, native tool or None, LLVM major or None) -> a
    :class:`mlbridge.validation.Build` that compiles and links C sources."""

    make: _EntryPoint


#: Every kind of capability.
CAPABILITIES = (
    ActionMask,
    AnswerTable,
    CompilerDecision,
    Deferral,
    PluginFeatures,
    Heuristic,
    KernelSuite,
    OptimizedModules,
    Validation,
    Trainer,
    DeployedBuild,
)

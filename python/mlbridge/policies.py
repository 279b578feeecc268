"""Built-in policies and :func:`load_policy` (policy specs given on the command line).

Policy specs:

``default``
    inlining: echo LLVM's own decision (needs ``-inliner-interactive-include-default``;
    :mod:`mlbridge.llvm` adds it and exposes the decision as the feature
    ``inlining_default``, working around LLVM 19's bug).
    regalloc-eviction / regalloc-priority: LLVM sends no default for register allocation, so these
    are *heuristic stand-ins* (documented on :class:`EvictDefault` and
    :class:`PriorityDefault`) that always give legal answers; they do not
    reproduce LLVM's own choices.
``always`` / ``never``
    inlining only: always / never inline.
``zeros``
    any problem or session: every output zero (useful for tests and benchmarks).
``path/to/file.py:NAME`` or ``package.module:NAME``
    a callable (or a class, instantiated without arguments) from a file or
    an importable module; ``NAME`` defaults to ``policy``.
``*.onnx``
    an ONNX model served with onnxruntime (:mod:`mlbridge.onnx_policy`).

A policy may carry ``wants_default = True`` to ask the LLVM driver to send
LLVM's own inlining decision (it then corrupts ``callee_basic_block_count``,
the driver restores ``inlining_default`` and reports that feature as -1),
and ``echoes_default = True`` when it always answers LLVM's own decision (the
driver then lifts LLVM's size cap, see :mod:`mlbridge.llvm.size_cap`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.policy import Policy, Session

#: The decisions of stock LLVM a policy can take, named as mlbridge's
#: problems are (``--problem``): what the built-in policies answer depends on
#: it. :mod:`mlbridge.llvm.advisors` serves each through LLVM's ML advisor.
INLINING = "inlining"
REGALLOC_EVICTION = "regalloc-eviction"
REGALLOC_PRIORITY = "regalloc-priority"
LLVM_DECISIONS = (INLINING, REGALLOC_EVICTION, REGALLOC_PRIORITY)

#: float32 represents every integer up to 2**24 exactly.
_EXACT_FLOAT32 = float(1 << 24)


class PolicyError(MlbridgeError):
    """A policy spec cannot be loaded."""


class InlineDefault:
    """Echo LLVM's own inlining decision (feature ``inlining_default``).

    ``echoes_default``: the LLVM driver lifts LLVM's size cap for it, so that
    the result is exactly LLVM's default inliner.
    """

    wants_default = True
    echoes_default = True

    def __call__(self, features: Dict[str, np.ndarray]) -> int:
        try:
            return int(features["inlining_default"][0])
        except KeyError:
            raise PolicyError(
                "the compiler sent no 'inlining_default' feature: run it "
                "with -inliner-interactive-include-default"
            ) from None


class Constant:
    """Always answer ``value`` (e.g. always / never inline)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __call__(self, features: Dict[str, np.ndarray]) -> int:
        return self.value


def evict_lowest_density(mask: np.ndarray, density: np.ndarray) -> int:
    """The eviction heuristic of mlbridge (``--policy default`` of
    ``regalloc-eviction``, and what that problem imitates before PPO): evict
    the legal interfering live range (``mask[i] != 0``, ``i`` below the last)
    of lowest use/def density if it is below the current live range's (the
    last candidate), else split or spill the current one. A stand-in for the
    default advisor's weight comparison, which a release LLVM does not
    report: on docs/regalloc.md's validation sample it allocates as well as
    the default advisor (0.9998x), where the spill weight
    ``weighed_read_writes_by_max`` gives 1.1243x. With no legal interfering
    range it answers the current one, legal or not."""
    legal = np.asarray(mask).reshape(-1) != 0
    values = np.asarray(density).reshape(-1)
    current = legal.size - 1
    others = [i for i in range(current) if legal[i]]
    if legal[current]:
        others = [i for i in others if values[i] < values[current]]
    return min(others, key=lambda i: values[i]) if others else current


class EvictDefault:
    """``--policy default`` for ``regalloc-eviction`` (LLVM sends no default
    decision): :func:`evict_lowest_density` on LLVM's ``mask`` and
    ``use_def_density``. Refuses a question with no legal candidate."""

    def __call__(self, features: Dict[str, np.ndarray]) -> int:
        mask = features["mask"]
        if not np.any(mask):
            raise PolicyError("no legal eviction candidate (mask is all zero)")
        return evict_lowest_density(mask, features["use_def_density"])


class PriorityDefault:
    """A legal priority heuristic (a stand-in: LLVM sends no default).

    Roughly LLVM's default shape: larger live ranges first (``li_size``,
    capped at 2**23), and ranges not yet split (stage < 2, RS_New/RS_Assign)
    before split ones (+2**23). The result is a non-negative float32 integer.
    """

    def __call__(self, features: Dict[str, np.ndarray]) -> np.float32:
        size = float(features["li_size"].reshape(-1)[0])
        stage = int(features["stage"].reshape(-1)[0]) if "stage" in features else 0
        prio = min(max(size, 0.0), _EXACT_FLOAT32 / 2 - 1)
        if stage < 2:
            prio += _EXACT_FLOAT32 / 2
        return np.float32(prio)


class Zeros:
    """Every output zero, for any session (learns the outputs in :meth:`begin`)."""

    def __init__(self) -> None:
        self._answer: Optional[Dict[str, np.ndarray]] = None

    def begin(self, session: Session) -> None:
        self._answer = {s.name: np.zeros(s.shape, s.dtype) for s in session.outputs}

    def __call__(self, features: Dict[str, np.ndarray]) -> Any:
        if self._answer is None:
            return 0
        return self._answer


def _builtin(name: str, problem: Optional[str]) -> Optional[Policy]:
    if name == "zeros":
        return Zeros()
    table: Dict[Tuple[str, str], Callable[[], Policy]] = {
        ("default", INLINING): InlineDefault,
        ("always", INLINING): lambda: Constant(1),
        ("never", INLINING): lambda: Constant(0),
        ("default", REGALLOC_EVICTION): EvictDefault,
        ("default", REGALLOC_PRIORITY): PriorityDefault,
    }
    if name not in ("default", "always", "never"):
        return None
    if problem not in LLVM_DECISIONS:
        raise PolicyError(f"policy '{name}' needs a problem ({', '.join(LLVM_DECISIONS)})")
    factory = table.get((name, problem))
    if factory is None:
        raise PolicyError(f"policy '{name}' has no meaning for {problem}")
    return factory()


def _load_object(spec: str) -> Any:
    target, _, attr = spec.rpartition(":") if ":" in spec else (spec, "", "policy")
    attr = attr or "policy"
    if target.endswith(".py") or os.sep in target:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise PolicyError(f"policy file {target} does not exist")
        mod_name = f"mlbridge_policy_{abs(hash(path)):x}"
        mod_spec = importlib.util.spec_from_file_location(mod_name, path)
        if mod_spec is None or mod_spec.loader is None:
            raise PolicyError(f"cannot load policy file {target}")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[mod_name] = module  # dataclasses and pickling want it there
        try:
            mod_spec.loader.exec_module(module)
        except Exception as err:
            del sys.modules[mod_name]
            raise PolicyError(
                f"policy file {target} failed to load: {type(err).__name__}: {err}"
            ) from err
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as err:
            raise PolicyError(f"cannot import policy module {target}: {err}") from err
    try:
        return getattr(module, attr)
    except AttributeError:
        raise PolicyError(f"{target} defines no '{attr}'") from None


def load_policy(spec: str, problem: Optional[str] = None) -> Policy:
    """The policy named by ``spec`` for the decision ``problem`` (one of
    :data:`LLVM_DECISIONS`, or None).

    See the module documentation for the accepted specs.
    """
    if problem is not None and problem not in LLVM_DECISIONS:
        raise PolicyError(
            f"unknown problem '{problem}'; expected one of {', '.join(LLVM_DECISIONS)}"
        )
    builtin = _builtin(spec, problem)
    if builtin is not None:
        return builtin
    if spec.lower().endswith(".onnx"):
        from mlbridge.onnx_policy import OnnxPolicyError, load_onnx_policy

        try:
            return load_onnx_policy(spec)
        except OnnxPolicyError as err:
            raise PolicyError(str(err)) from None
    obj = _load_object(spec)
    if isinstance(obj, type):
        obj = obj()
    if not callable(obj):
        raise PolicyError(f"{spec} is not callable")
    return obj


__all__ = [
    "INLINING",
    "LLVM_DECISIONS",
    "REGALLOC_EVICTION",
    "REGALLOC_PRIORITY",
    "Constant",
    "EvictDefault",
    "InlineDefault",
    "PolicyError",
    "PriorityDefault",
    "Zeros",
    "evict_lowest_density",
    "load_policy",
]

"""Gymnasium environments on stock compilers (docs/gym.md).

Importing this package registers the environment ids with gymnasium (when
gymnasium is installed: ``pip install 'mlbridge-compiler[gym]'``); the
environments themselves, and what they import, load on first use
(``gymnasium.make``, or an attribute of this package):

- ``mlbridge/Inlining-v0``: :class:`mlbridge.gym.inlining.InliningEnv`,
  inlining for size on clang-19, one call site per step.
- ``mlbridge/PhaseOrdering-v0``: :class:`mlbridge.gym.phase_ordering.PhaseOrderingEnv`,
  pass ordering for IR size on LLVM 19's ``mlbridge-phase-service``, one
  pass (or sub-sequence of ``-Oz``) per step.
- ``mlbridge/RegallocEviction-v0``:
  :class:`mlbridge.gym.regalloc_eviction.RegallocEvictionEnv`, eviction in
  llc-19's greedy register allocator, one eviction question per step.

.. code-block:: python

    import gymnasium as gym
    import mlbridge.gym  # noqa: F401

    env = gym.make("mlbridge/Inlining-v0")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Dict

from mlbridge.problems import environments, get_problem

if TYPE_CHECKING:
    from mlbridge.gym.inlining import InliningEnv
    from mlbridge.gym.phase_ordering import PhaseOrderingEnv
    from mlbridge.gym.regalloc_eviction import RegallocEvictionEnv

__all__ = [
    "ENVIRONMENTS",
    "INLINING_ID",
    "PHASE_ORDERING_ID",
    "REGALLOC_EVICTION_ID",
    "InliningEnv",
    "PhaseOrderingEnv",
    "RegallocEvictionEnv",
]

#: The id of the inlining environment.
INLINING_ID = get_problem("inlining").env_id
#: The id of the phase-ordering environment.
PHASE_ORDERING_ID = get_problem("phase-ordering").env_id
#: The id of the register-allocation eviction environment.
REGALLOC_EVICTION_ID = get_problem("regalloc-eviction").env_id

#: Every environment: gymnasium id -> entry point ("module:class"), one per
#: problem of :mod:`mlbridge.problems`.
ENVIRONMENTS: Dict[str, str] = environments()


def _register() -> None:
    try:
        from gymnasium.envs.registration import register, registry
    except ImportError:  # the bridge, the modules and the pools need no gymnasium
        return
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point)


_register()


def __getattr__(name: str) -> Any:
    """The environment classes, imported on first access."""
    for entry_point in ENVIRONMENTS.values():
        module, _, attribute = entry_point.partition(":")
        if attribute == name:
            return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

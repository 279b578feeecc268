"""Gymnasium environments on stock compilers (docs/gym.md).

This package is the environments' shared core (the compiler bridge, the
served compilation, module sets, episode limits, worker pools); each
problem's own environment lives in its folder of :mod:`mlbridge.problems`.
Importing this package registers every problem's gymnasium id (when
gymnasium is installed: ``pip install 'mlbridge-compiler[gym]'``); the
environments themselves, and what they import, load on first use
(``gymnasium.make``, or an attribute of this package named like the class).

.. code-block:: python

    import gymnasium as gym
    import mlbridge.gym  # noqa: F401

    env = gym.make("mlbridge/Inlining-v0")
"""

from __future__ import annotations

import importlib
from typing import Any, Dict

from mlbridge.problems import environments

__all__ = ["ENVIRONMENTS"]

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
    """A problem's environment class, imported on first access."""
    for entry_point in ENVIRONMENTS.values():
        module, _, attribute = entry_point.partition(":")
        if attribute == name:
            return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

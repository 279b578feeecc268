"""An untrained eviction policy as ``mlbridge train regalloc-eviction``
exports it, for the tests that deploy one (the interactive host, the
deployed build of ``mlbridge validate``)."""

from __future__ import annotations

from pathlib import Path

import pytest


def untrained_eviction_policy(path: Path) -> Path:
    """Writes the policy to ``path`` (skips without torch or SB3)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("stable_baselines3")
    import gymnasium
    import numpy as np
    from stable_baselines3.common.policies import ActorCriticPolicy

    from mlbridge.problems.regalloc_eviction import CANDIDATES, DEPLOY_INPUTS, observation_names
    from mlbridge.train.export import export_policy

    names = observation_names()
    space = gymnasium.spaces.Box(-np.inf, np.inf, (len(names),), np.float32)
    torch.manual_seed(0)
    net = ActorCriticPolicy(space, gymnasium.spaces.Discrete(CANDIDATES), lambda _: 3e-4)
    inputs, keep = DEPLOY_INPUTS(names, list(range(len(names))))
    export_policy(net, path, inputs, "index_to_evict", keep, mask=list(range(CANDIDATES)))
    return path

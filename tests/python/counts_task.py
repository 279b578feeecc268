"""A toy problem for tests of ``mlbridge train``'s machinery, with no
compiler: four count-like features, and a reward for action 1 when the
third is large. Episodes last 8 steps."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import gymnasium
import numpy as np
import pytest

from mlbridge.train import tasks
from mlbridge.train.ppo import TrainConfig


class Counts(gymnasium.Env):
    """Four count-like features; rewards action 1 when feature 2 is large."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)
    feature_names = ("a", "b", "c", "d")

    def __init__(self, split: str = "train") -> None:
        self._t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self._t, self._obs = 0, self._draw()
        return self._obs, {}

    def _draw(self):
        return self.np_random.integers(-50, 5000, 4).astype(np.float32)

    def step(self, action):
        reward = float(action == int(self._obs[2] > 2500))
        self._t, self._obs = self._t + 1, self._draw()
        return self._obs, reward, self._t >= 8, False, {}


@contextmanager
def counts_task(name: str, **changes: Any) -> Iterator[tasks.Task]:
    """The task ``name``: PPO on :class:`Counts`, in-process, registered
    for the duration; ``changes``: other fields of the task."""
    env_id = f"mlbridge-test/{name}-v0"
    if env_id not in gymnasium.registry:
        gymnasium.register(env_id, entry_point=Counts)
    with pytest.MonkeyPatch.context() as patch:
        task = tasks.Task(
            name=name,
            env_id=env_id,
            environment=f"{__name__}:Counts",
            output="decision",
            description="a toy: 1 when the third count is large",
            **changes,
        )
        patch.setitem(tasks.TASKS, name, task)
        yield task


def tiny_config(task: str, out: Path, timesteps: int, **changes: Any) -> TrainConfig:
    """A run of a few hundred steps in-process: two serial workers, an
    update every 64 steps, a checkpoint every 64, no progress bar."""
    settings: dict = dict(
        workers=2,
        backend="serial",
        n_steps=32,
        batch_size=32,
        epochs=2,
        checkpoint_every=64,
        progress=False,
    )
    return TrainConfig(task=task, out=out, timesteps=timesteps, **{**settings, **changes})

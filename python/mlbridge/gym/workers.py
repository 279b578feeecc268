"""Rollout workers: each holds one environment (so one compiler session) and
runs steps, rollouts and evaluation episodes where it lives.

A :class:`RolloutWorker` is a plain object: :mod:`mlbridge.gym.pool` makes
it a Ray actor, a local process or an in-process object behind one API.
Policies travel to workers as picklable callables (``observation -> action``);
``None`` means uniformly random actions from the worker's seeded action space.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

#: A policy as workers run it: observation -> action.
ActionFn = Callable[[Any], Any]

#: The info keys an episode summary keeps from the last step of an episode.
SUMMARY_KEYS = (
    "module",
    "error",
    "text_size",
    "oz_text_size",
    "instcount",
    "baseline_instcount",
    "initial_instcount",
    "oz_ratio",
    "decisions",
)


@dataclass
class Rollout:
    """Consecutive steps of one worker (episodes are reset automatically).

    ``observations[i]`` is what ``actions[i]`` answered; ``episodes`` sums up
    every episode that ended during the rollout.
    """

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    episodes: List[Dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def steps(self) -> int:
        """Number of steps."""
        return len(self.actions)


def episode_summary(episode_return: float, length: int, info: Mapping[str, Any]) -> Dict[str, Any]:
    """What is kept of an ended episode: its return, length and final info."""
    out: Dict[str, Any] = {"return": float(episode_return), "length": int(length)}
    out.update({k: info[k] for k in SUMMARY_KEYS if k in info})
    return out


#: Wraps an environment (e.g. an observation transform), run in the worker.
EnvWrapper = Callable[[Any], Any]


class RolloutWorker:
    """One environment made by ``gymnasium.make(env_id, **env_kwargs)``,
    then given to ``wrapper`` when there is one."""

    def __init__(
        self,
        env_id: str,
        env_kwargs: Optional[Mapping[str, Any]],
        seed: int,
        wrapper: Optional[EnvWrapper] = None,
    ) -> None:
        import gymnasium

        import mlbridge.gym  # noqa: F401  (registers the mlbridge ids in this process)

        self.env = gymnasium.make(env_id, **dict(env_kwargs or {}))
        if wrapper is not None:
            self.env = wrapper(self.env)
        self.seed = seed
        self.env.action_space.seed(seed)
        self._obs: Optional[Any] = None
        self._return, self._length = 0.0, 0
        self._next_seed: Optional[int] = seed

    def reseed(self, seed: int) -> None:
        """Starts over from ``seed``: the action space is seeded with it and
        the next rollout begins with ``reset(seed=seed)`` (so workers given
        the same seed make the same episodes with the same random actions)."""
        self.seed = seed
        self.env.action_space.seed(seed)
        self._next_seed = seed
        self._obs = None
        self._return, self._length = 0.0, 0

    def where(self) -> Dict[str, Any]:
        """Host, process and (under Ray) node of this worker."""
        node = None
        try:
            import ray

            if ray.is_initialized():
                node = ray.get_runtime_context().get_node_id()
        except ImportError:
            pass
        return {"host": socket.gethostname(), "pid": os.getpid(), "node": node}

    def spaces(self) -> Tuple[Any, Any]:
        """(observation space, action space)."""
        return self.env.observation_space, self.env.action_space

    def attribute(self, name: str) -> Any:
        """An attribute of the (unwrapped) environment."""
        return getattr(self.env.unwrapped, name)

    def call_env(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """Calls a method of the (unwrapped) environment."""
        return getattr(self.env.unwrapped, name)(*args, **kwargs)

    def reset(
        self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[Any, Dict[str, Any]]:
        """Starts an episode (the first reset uses the worker's seed)."""
        if seed is None:
            seed, self._next_seed = self._next_seed, None
        self._obs, info = self.env.reset(seed=seed, options=options)
        self._return, self._length = 0.0, 0
        return self._obs, info

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]:
        """One step; when the episode ends, info["episode"] sums it up and the
        returned observation is the first of the next episode (the last one
        is info["final_observation"])."""
        if self._obs is None:
            self.reset()
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if terminated or truncated:
            info = dict(info)
            info["episode"] = episode_summary(self._return, self._length, info)
            info["final_observation"] = obs
            obs, _ = self.reset()
        self._obs = obs
        return obs, float(reward), bool(terminated), bool(truncated), info

    def rollout(self, policy: Optional[ActionFn], steps: int) -> Rollout:
        """``steps`` steps with ``policy`` (None: random), resetting as needed."""
        if self._obs is None:
            self.reset()
        start = time.monotonic()
        observations, actions, rewards, terms, truncs = [], [], [], [], []
        episodes: List[Dict[str, Any]] = []
        for _ in range(steps):
            obs = self._obs
            action = self.env.action_space.sample() if policy is None else policy(obs)
            _, reward, terminated, truncated, info = self.step(action)
            observations.append(obs)
            actions.append(action)
            rewards.append(reward)
            terms.append(terminated)
            truncs.append(truncated)
            if "episode" in info:
                episodes.append(info["episode"])
        return Rollout(
            np.asarray(observations),
            np.asarray(actions),
            np.asarray(rewards, np.float64),
            np.asarray(terms, bool),
            np.asarray(truncs, bool),
            episodes,
            time.monotonic() - start,
        )

    def evaluate(
        self, policy: Optional[ActionFn], modules: Sequence[str], max_steps: int = 100_000
    ) -> List[Dict[str, Any]]:
        """One episode per module (``reset(options={"module": name})``)."""
        results = []
        for name in modules:
            obs, info = self.env.reset(options={"module": name})
            total, length, done = 0.0, 0, False
            while not done and length < max_steps:
                action = self.env.action_space.sample() if policy is None else policy(obs)
                obs, reward, terminated, truncated, info = self.env.step(action)
                total += float(reward)
                length += 1
                done = bool(terminated or truncated)
            summary = episode_summary(total, length, info)
            summary.setdefault("module", name)
            if not done:
                summary["error"] = f"no end after {max_steps} steps"
            results.append(summary)
        self._obs = None
        return results

    def close(self) -> None:
        """Closes the environment (stops its compiler)."""
        self.env.close()

"""A Stable-Baselines3 vectorised environment whose environments are the
workers of a :class:`mlbridge.gym.pool.WorkerPool` (Ray actors, local
processes or in-process), so that SB3's algorithms collect experience from
compiler sessions spread over a cluster.

Needs ``stable-baselines3`` (``pip install 'mlbridge-compiler[train]'``).
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Type

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from mlbridge.gym.pool import WorkerPool


def _sb3_info(
    info: Dict[str, Any], terminated: bool, truncated: bool, started: float
) -> Dict[str, Any]:
    """SB3's conventions for an ended episode: ``terminal_observation``,
    ``TimeLimit.truncated`` and ``episode`` with ``r``/``l``/``t``."""
    out = dict(info)
    if "final_observation" in out:
        out["terminal_observation"] = out.pop("final_observation")
    if terminated or truncated:
        out["TimeLimit.truncated"] = truncated and not terminated
        summary = out.get("episode") or {}
        out["episode"] = {
            "r": summary.get("return", 0.0),
            "l": summary.get("length", 0),
            "t": round(time.monotonic() - started, 6),
            **summary,
        }
    return out


class PoolVecEnv(VecEnv):
    """``pool.num_workers`` environments stepped in parallel by the pool."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        observation_space, action_space = pool.call("spaces")[0]
        super().__init__(pool.num_workers, observation_space, action_space)
        self._actions: Optional[np.ndarray] = None
        self._started = time.monotonic()

    def reset(self) -> Any:
        seeds = [(s, None) for s in self._seeds] if self._seeds else None
        results = self.pool.call("reset", seeds)
        self._reset_seeds()
        self.reset_infos = [info for _, info in results]
        return np.stack([obs for obs, _ in results])

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> Any:
        if self._actions is None:
            raise RuntimeError("step_wait without step_async")
        actions, self._actions = self._actions, None
        results = self.pool.call("step", [(a,) for a in actions])
        obs = np.stack([r[0] for r in results])
        rewards = np.asarray([r[1] for r in results], np.float32)
        dones = np.asarray([r[2] or r[3] for r in results], bool)
        infos = [_sb3_info(r[4], r[2], r[3], self._started) for r in results]
        return obs, rewards, dones, infos

    def close(self) -> None:
        self.pool.close()

    def _indices(self, indices: VecEnvIndices) -> List[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> List[Any]:
        wanted = self._indices(indices)
        values = self.pool.call("attribute", [(attr_name,)] * self.num_envs)
        return [values[i] for i in wanted]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise NotImplementedError("the environments of a worker pool are read-only from here")

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> List[Any]:
        wanted = self._indices(indices)
        values = self.pool.call(
            "call_env", [(method_name, method_args, method_kwargs)] * self.num_envs
        )
        return [values[i] for i in wanted]

    def env_is_wrapped(self, wrapper_class: Type[Any], indices: VecEnvIndices = None) -> List[bool]:
        return [False] * len(self._indices(indices))

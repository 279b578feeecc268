"""Warm start: before PPO, the actor imitates a decision the observation
already carries (for inlining, LLVM's own ``inlining_default``), or a
heuristic over the features where the compiler's own decision is not
observable (register allocation), as ml-compiler-opt starts its RL from
behavioural cloning. PPO then explores
around a policy that already matches the compiler's heuristic instead of
around a coin flip (whose random inlining makes some modules ten times
larger and their episodes thousands of steps long).
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from mlbridge.gym.pool import WorkerPool


class FollowFeature:
    """A picklable policy answering ``obs[index] > threshold`` as 0/1."""

    def __init__(self, index: int, threshold: float = 0.5) -> None:
        self.index, self.threshold = index, threshold

    def __call__(self, observation: Any) -> int:
        return int(np.asarray(observation)[self.index] > self.threshold)


class Constant:
    """A picklable policy answering ``action`` everywhere (a problem's
    ``baseline_action``: the compiler's own decision)."""

    def __init__(self, action: int) -> None:
        self.action = action

    def __call__(self, observation: Any) -> int:
        return self.action


def warm_start(
    policy: Any,
    pool: WorkerPool,
    follow: Callable[[Any], int],
    steps_per_worker: int = 2000,
    epochs: int = 30,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
) -> Dict[str, float]:
    """Trains ``policy`` (an SB3 ActorCriticPolicy, masked or not) to answer
    as ``follow`` does (a picklable ``observation -> action``, e.g.
    :class:`FollowFeature`) on the (transformed) observations ``follow``
    visits; returns the agreement reached on them."""
    import torch

    rollouts = pool.rollout(follow, steps_per_worker)
    obs = np.concatenate([r.observations for r in rollouts]).astype(np.float32)
    labels = np.concatenate([r.actions for r in rollouts]).astype(np.int64)
    x, y = torch.as_tensor(obs), torch.as_tensor(labels)
    actor = list(policy.mlp_extractor.policy_net.parameters()) + list(
        policy.action_net.parameters()
    )
    optimiser = torch.optim.Adam(actor, lr=learning_rate)
    generator = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x), batch_size):
            batch = order[start : start + batch_size]
            logits = policy.get_distribution(x[batch]).distribution.logits
            loss = torch.nn.functional.cross_entropy(logits, y[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    with torch.no_grad():
        logits = policy.get_distribution(x).distribution.logits
        agreement = float((logits.argmax(dim=1) == y).float().mean())
    return {
        "samples": float(len(x)),
        "agreement": agreement,
        "positive": float((labels > 0).mean()),
    }

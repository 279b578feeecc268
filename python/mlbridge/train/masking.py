"""Discrete actions of which only some are legal at each step.

A problem that declares an ``action_mask`` (:class:`mlbridge.problems.Problem`)
has one observation feature per action, non-zero where the action is legal
(LLVM's eviction advisor sends such a ``mask``). The same rule applies in
training and in deployment: the logits of illegal actions are set to
:data:`MASKED_LOGIT` before sampling or the greedy choice, so a policy never
picks one and PPO's probabilities and entropy are over the legal actions
only. :class:`mlbridge.train.masked_policy.MaskedActorCriticPolicy` does it
for Stable-Baselines3's PPO;
:func:`mlbridge.train.export.deployable` writes it into the ONNX model.
"""

from __future__ import annotations

from typing import Any, List, Sequence

#: What an illegal action's logit is lowered by: its probability is 0 in float32.
MASKED_LOGIT = -1e9


def mask_indices(names: Sequence[str], mask: str, actions: int) -> List[int]:
    """Where the features ``mask`` (``mask`` or ``mask[i]``) are in ``names``:
    one per action, in order. Raises ValueError when there are not ``actions``."""
    found = [i for i, n in enumerate(names) if n == mask or n.startswith(f"{mask}[")]
    if len(found) != actions:
        raise ValueError(
            f"the observation has {len(found)} features {mask!r}, not one per action ({actions})"
        )
    return found


def masked_logits(logits: Any, mask: Any) -> Any:
    """``logits`` (a torch tensor) lowered by :data:`MASKED_LOGIT` where
    ``mask`` is 0. Written with the operators mlbridge-aot compiles (Abs,
    Sign, Sub, Mul, Add): ``legal = sign(|mask|)`` is 1 or 0, and
    ``logits + (1 - legal) * MASKED_LOGIT`` leaves the legal logits as they are."""
    import torch

    legal = torch.sign(torch.abs(mask))
    return logits + (1.0 - legal) * MASKED_LOGIT

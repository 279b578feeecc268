"""Stable-Baselines3's actor-critic over masked actions (:mod:`mlbridge.train.masking`)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy

import torch
from mlbridge.train.masking import masked_logits


class MaskedActorCriticPolicy(ActorCriticPolicy):
    """SB3's MLP actor-critic whose action distribution excludes the actions
    the observation's mask features (``mask_index``) say are illegal."""

    def __init__(self, *args: Any, mask_index: Sequence[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mask_index = list(mask_index)
        # not a buffer: the weights stay those of an unmasked policy
        self._mask_tensor = torch.tensor(self.mask_index, dtype=torch.int64)

    def _get_constructor_parameters(self) -> Dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["mask_index"] = self.mask_index
        return data

    def _masked_distribution(self, latent_pi: torch.Tensor, obs: torch.Tensor) -> Distribution:
        logits = self.action_net(latent_pi)
        mask = torch.index_select(obs.float(), 1, self._mask_tensor.to(obs.device))
        return self.action_dist.proba_distribution(action_logits=masked_logits(logits, mask))

    def _latents(self, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        features = self.extract_features(obs)
        if self.share_features_extractor:
            return self.mlp_extractor(features)
        pi_features, vf_features = features
        return (
            self.mlp_extractor.forward_actor(pi_features),
            self.mlp_extractor.forward_critic(vf_features),
        )

    def forward(
        self, obs: torch.Tensor, deterministic: bool = False
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        latent_pi, latent_vf = self._latents(obs)
        distribution = self._masked_distribution(latent_pi, obs)
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        actions = actions.reshape((-1, *self.action_space.shape))  # type: ignore[misc]
        return actions, self.value_net(latent_vf), log_prob

    def evaluate_actions(
        self, obs: Any, actions: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        latent_pi, latent_vf = self._latents(obs)
        distribution = self._masked_distribution(latent_pi, obs)
        return self.value_net(latent_vf), distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs: Any) -> Distribution:
        features = super().extract_features(obs, self.pi_features_extractor)
        assert isinstance(features, torch.Tensor)  # one extractor for the actor
        latent_pi = self.mlp_extractor.forward_actor(features)
        return self._masked_distribution(latent_pi, obs)

"""Masked actions (mlbridge.train.masking): the PPO policy of a problem with
an action mask never samples an illegal action, its probabilities and
entropy are over the legal ones, and the exported ONNX model (which
mlbridge-aot compiles) picks the action SB3 picks, always a legal one."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
gymnasium = pytest.importorskip("gymnasium")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from mlbridge.tensor_spec import TensorSpec  # noqa: E402
from mlbridge.train.export import export_policy  # noqa: E402
from mlbridge.train.features import SignedLogFeatures, signed_log  # noqa: E402
from mlbridge.train.masked_policy import MaskedActorCriticPolicy  # noqa: E402
from mlbridge.train.masking import MASKED_LOGIT, mask_indices, masked_logits  # noqa: E402

ACTIONS = 5


class _Masked(gymnasium.Env):
    """A value per action and a mask; the reward is the chosen value (an
    illegal choice is an error)."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2 * ACTIONS + 1,), np.float32)
    action_space = gymnasium.spaces.Discrete(ACTIONS)
    feature_names = (
        tuple(f"mask[{i}]" for i in range(ACTIONS))
        + tuple(f"value[{i}]" for i in range(ACTIONS))
        + ("progress",)
    )

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self._obs = self._draw()
        return self._obs, {}

    def _draw(self):
        mask = self.np_random.integers(0, 2, ACTIONS)
        mask[self.np_random.integers(ACTIONS)] = 1
        values = self.np_random.integers(-100, 100, ACTIONS)
        return np.concatenate([mask, values, [0.5]]).astype(np.float32)

    def step(self, action):
        if not self._obs[int(action)]:
            raise AssertionError(f"illegal action {action} for mask {self._obs[:ACTIONS]}")
        reward = float(self._obs[ACTIONS + int(action)]) / 100
        self._obs = self._draw()
        return self._obs, reward, False, False, {}


def _model():
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    env = SignedLogFeatures()(_Masked())
    index = mask_indices(env.feature_names, "mask", ACTIONS)
    model = PPO(
        MaskedActorCriticPolicy,
        env,
        n_steps=64,
        batch_size=64,
        seed=0,
        device="cpu",
        policy_kwargs={"mask_index": index},
    )
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model, env


def test_mask_indices_find_one_feature_per_action():
    assert mask_indices(_Masked.feature_names, "mask", ACTIONS) == list(range(ACTIONS))
    with pytest.raises(ValueError, match="not one per action"):
        mask_indices(_Masked.feature_names, "mask", ACTIONS + 1)
    with pytest.raises(ValueError, match="0 features"):
        mask_indices(_Masked.feature_names, "legal", ACTIONS)


def test_masked_logits_lower_only_the_illegal_actions():
    logits = torch.tensor([[1.0, 2.0, 3.0]])
    out = masked_logits(logits, torch.tensor([[0.0, 0.69, -2.0]]))
    assert out[0, 0] == 1.0 + MASKED_LOGIT and out[0, 1] == 2.0 and out[0, 2] == 3.0
    assert torch.softmax(out, 1)[0, 0] == 0.0


def test_the_policy_samples_and_learns_only_legal_actions():
    model, env = _model()
    model.learn(256)  # the env raises on an illegal action
    policy = model.policy
    obs, _ = env.reset(seed=3)
    for _ in range(200):
        tensor = torch.as_tensor(obs).unsqueeze(0)
        actions, _, log_prob = policy(tensor)
        assert env.unwrapped._obs[int(actions[0])] == 1 and torch.isfinite(log_prob).all()
        _, _, entropy = policy.evaluate_actions(tensor, actions)
        legal = int(env.unwrapped._obs[:ACTIONS].sum())
        assert entropy is not None and 0.0 <= float(entropy[0]) <= np.log(legal) + 1e-5
        greedy, _ = model.predict(obs, deterministic=True)
        assert env.unwrapped._obs[int(greedy)] == 1
        obs, *_ = env.step(int(actions[0]))


def test_the_exported_model_picks_sb3s_legal_action_and_compiles_ahead_of_time(tmp_path):
    model, env = _model()
    model.learn(128)
    path = tmp_path / "masked.onnx"
    specs = [
        TensorSpec("mask", "int64_t", (ACTIONS,)),
        TensorSpec("value", "float", (ACTIONS,)),
        TensorSpec("progress", "float", (1,)),
    ]
    export_policy(model.policy, path, specs, "index_to_evict", mask=list(range(ACTIONS)))
    session = ort.InferenceSession(str(path))
    rng = np.random.default_rng(0)
    for _ in range(300):
        mask = rng.integers(0, 2, ACTIONS)
        mask[rng.integers(ACTIONS)] = 1
        values = rng.normal(0, 50, ACTIONS).astype(np.float32)
        (got,) = session.run(
            None,
            {"mask": mask, "value": values, "progress": np.asarray([0.5], np.float32)},
        )
        raw = np.concatenate([mask, values, [0.5]]).astype(np.float32)
        want, _ = model.predict(signed_log(raw), deterministic=True)
        assert int(got[0]) == int(want) and mask[int(got[0])] == 1
    from mlbridge.aot import compile_model

    # raises AotError on any operator mlbridge-aot cannot compile
    generated = compile_model(str(path), class_name="MaskedPolicy")
    assert "class MaskedPolicy" in generated.header

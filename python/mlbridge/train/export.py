"""A trained Stable-Baselines3 policy as an ONNX model the compiler runs.

The model takes the compiler's own tensors (the names, types and shapes of
the runner's input specs: LLVM's feature names for the inliner, the phase
service's tensors for phase ordering), does what the training wrapper did
(:mod:`mlbridge.train.features`: keep some features, signed log), runs the
actor network and answers the greedy action as one int64. So the policy
deployed in the compiler decides exactly as ``model.predict(obs,
deterministic=True)`` does in Python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from mlbridge.onnx_tools import export_torch
from mlbridge.tensor_spec import TensorSpec
from mlbridge.train.masking import masked_logits


def deployable(
    policy: Any, keep: Optional[Sequence[int]] = None, mask: Optional[Sequence[int]] = None
) -> Any:
    """A torch module: compiler tensors (in spec order) -> greedy action [1].

    ``policy`` is an SB3 ``ActorCriticPolicy`` over a flat Box observation;
    ``keep`` indexes the concatenation of the flattened inputs (None: all);
    ``mask`` indexes the kept features saying which actions are legal (None:
    all are), as :mod:`mlbridge.train.masking` does in training.
    """
    import torch

    class DeployedPolicy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.actor = policy.mlp_extractor.policy_net
            self.action_net = policy.action_net
            self.keep = None if keep is None else torch.tensor(list(keep), dtype=torch.int64)
            self.mask = None if mask is None else torch.tensor(list(mask), dtype=torch.int64)

        def forward(self, *inputs: Any) -> Any:
            raw = torch.cat([x.reshape(-1) for x in inputs]).to(torch.float32)
            if self.keep is not None:
                raw = torch.index_select(raw, 0, self.keep)
            x = torch.sign(raw) * torch.log(torch.abs(raw) + 1.0)
            logits = self.action_net(self.actor(x.unsqueeze(0)))
            if self.mask is not None:
                logits = masked_logits(logits, torch.index_select(x, 0, self.mask).unsqueeze(0))
            return torch.argmax(logits, dim=1)

    module = DeployedPolicy()
    module.eval()
    return module


def export_policy(
    policy: Any,
    path: Path,
    inputs: Sequence[TensorSpec],
    output: str,
    keep: Optional[Sequence[int]] = None,
    mask: Optional[Sequence[int]] = None,
) -> None:
    """Writes ``policy`` (see :func:`deployable`) as ONNX at ``path`` with
    ``inputs`` and one output ``output`` int64 [1], checked against them."""
    import torch

    with torch.no_grad():
        export_torch(
            deployable(policy, keep, mask),
            str(path),
            inputs,
            [TensorSpec(output, "int64_t", (1,))],
            opset=13,
        )

"""PPO fine-tuning from a deployed policy: the actor of a ``policy.onnx``
that :func:`mlbridge.train.export.export_policy` wrote (a run's, or a model
mlbridge ships: :mod:`mlbridge.models`) loaded back into a new SB3 policy.

The model is untrusted (:mod:`mlbridge.train.onnx_weights`). It must read
exactly the inputs the task's policy would be exported with, in their order,
and hold the actor of SB3's network of the same shape: ``actor.N.weight``
and ``.bias`` for the hidden layers, ``action_net.weight`` and ``.bias``.
The critic starts afresh.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Dict, Sequence

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.train.onnx_weights import read_weights

#: Where each part of the SB3 actor is in the exported graph.
PARTS = ("actor.", "action_net.")


def load_actor(policy: Any, path: Path, inputs: Sequence[str]) -> Dict[str, Any]:
    """Copies the actor of the exported policy at ``path`` into ``policy``
    (an SB3 ``ActorCriticPolicy``) whose deployed model reads ``inputs``;
    returns what the run records of it (path, SHA-256)."""
    import torch

    names, weights, _ = read_weights(path, lambda n: n.startswith(PARTS))
    if names != list(inputs):
        raise MlbridgeError(
            f"{path}: the model reads {len(names)} inputs ({', '.join(names[:4])}, ...), "
            f"not the {len(inputs)} this task's policy reads ({', '.join(list(inputs)[:4])}, ...)"
        )
    modules = {"actor.": policy.mlp_extractor.policy_net, "action_net.": policy.action_net}
    targets = {
        prefix + key: tensor
        for prefix, module in modules.items()
        for key, tensor in module.state_dict().items()
    }
    wrong = sorted(
        set(weights) ^ set(targets)
        | {k for k in set(weights) & set(targets) if weights[k].shape != tuple(targets[k].shape)}
    )
    if wrong or not all(np.issubdtype(w.dtype, np.floating) for w in weights.values()):
        raise MlbridgeError(
            f"{path}: not the actor of this task's network "
            f"(SB3's MLP, {', '.join(f'{k} {tuple(v.shape)}' for k, v in targets.items())}); "
            f"differs at {', '.join(wrong[:4]) or 'the weights types'}"
        )
    with torch.no_grad():
        for prefix, module in modules.items():
            module.load_state_dict(
                {
                    key: torch.as_tensor(weights[prefix + key].astype(np.float32))
                    for key in module.state_dict()
                }
            )
    return {"init": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}

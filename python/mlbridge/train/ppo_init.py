"""PPO fine-tuning from a deployed policy: the actor of a ``policy.onnx``
that :func:`mlbridge.train.export.export_policy` wrote (a run's, or a model
mlbridge ships: :mod:`mlbridge.models`) loaded back into a new SB3 policy.

The model is untrusted (:mod:`mlbridge.train.onnx_weights`). It must read
exactly the inputs the task's policy would be exported with, in their order,
and compute the actor of SB3's network of the same shape: one ``Gemm``
(``transB=1``, as a ``torch.nn.Linear`` exports) per linear layer, in
order, with a ``Tanh`` between them. The weights are found through the
``Gemm`` nodes, not by name: the exporter shares equal constants (an
untrained network's zero biases) through ``Identity`` nodes. The critic
starts afresh. A model may read fewer of the inputs, in the same order (a
policy trained without ``mlbridge train --plugin-features``, fine-tuned
with it): the inputs it does not read start with zero weights, so the
policy first decides exactly as the model does. A model exported with a deference
(:class:`mlbridge.train.export.Deference`) gives its bonus back, so that
fine-tuning starts from the model as it deploys.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.train.export import DEFERENCE_KEY
from mlbridge.train.onnx_weights import read_weights


def _linears(policy: Any) -> List[Any]:
    import torch

    layers = [m for m in policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
    return [*layers, policy.action_net]


def load_actor(
    policy: Any, path: Path, inputs: Sequence[str], flag: Optional[str] = None
) -> Dict[str, Any]:
    """Copies the actor of the exported policy at ``path`` into ``policy``,
    an SB3 ``ActorCriticPolicy`` whose deployed model reads ``inputs``.

    The model may read some of ``inputs`` in their order (the others start
    at zero weight), and ``flag`` after them (``Deferral``,
    which only its deference reads). Returns what the run records of it:
    path, SHA-256, and its deference bonus (0.0 when it has none)."""
    from onnx.helper import get_attribute_value

    import torch

    read = read_weights(path, lambda _name: True)
    names, weights, graph = read.inputs, read.weights, read.model.graph
    bonus = _deference_bonus(path, read.model)
    if flag is not None and names[-1:] == [flag]:
        names = names[:-1]
    columns = _columns(names, inputs)
    if columns is None:
        raise MlbridgeError(
            f"{path}: the model reads {len(names)} inputs ({', '.join(names[:4])}, ...), "
            f"not the {len(inputs)} this task's policy reads ({', '.join(list(inputs)[:4])}, ...) "
            "or some of them in their order"
        )
    linears = _linears(policy)
    shapes = ", ".join(str(tuple(m.weight.shape)) for m in linears)
    wrong = MlbridgeError(
        f"{path}: not the actor of this task's network (SB3's MLP, layers {shapes}, tanh)"
    )
    # The exporter writes a constant equal to an earlier one as an Identity of it.
    aliases = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity" and n.input}

    def constant(name: str) -> Any:
        for _ in range(len(aliases) + 1):
            if name in weights:
                return weights[name]
            name = aliases.get(name, "")
        return None

    gemms = [n for n in graph.node if n.op_type == "Gemm"]
    tanhs = sum(n.op_type == "Tanh" for n in graph.node)
    if len(gemms) != len(linears) or tanhs != len(linears) - 1:
        raise wrong
    loaded: List[Any] = []
    for node, linear in zip(gemms, linears):
        attributes = {a.name: get_attribute_value(a) for a in node.attribute}
        w = constant(node.input[1]) if len(node.input) == 3 else None
        b = constant(node.input[2]) if len(node.input) == 3 else None
        narrow = (linear.weight.shape[0], len(columns))
        if w is not None and not loaded and w.shape == narrow and len(columns) < len(inputs):
            # The inputs the model does not read start with zero weights.
            wide = np.zeros((narrow[0], len(inputs)), w.dtype)
            wide[:, columns] = w
            w = wide
        if (
            attributes.get("transA", 0) != 0
            or attributes.get("transB", 0) != 1
            or attributes.get("alpha", 1.0) != 1.0
            or attributes.get("beta", 1.0) != 1.0
            or w is None
            or b is None
            or w.shape != tuple(linear.weight.shape)
            or b.shape != tuple(linear.bias.shape)
            or not (np.issubdtype(w.dtype, np.floating) and np.issubdtype(b.dtype, np.floating))
        ):
            raise wrong
        loaded.append((linear, w, b))
    with torch.no_grad():
        for linear, w, b in loaded:
            linear.weight.copy_(torch.as_tensor(w.astype(np.float32)))
            linear.bias.copy_(torch.as_tensor(b.astype(np.float32)))
    return {
        "init": str(path),
        "sha256": read.sha256,
        "deference": bonus,
    }


def _columns(names: Sequence[str], inputs: Sequence[str]) -> Optional[List[int]]:
    """Where the model's inputs ``names`` are among ``inputs`` when they are
    some of them in the same order, else None."""
    where = {name: i for i, name in enumerate(inputs)}
    columns = [where.get(name, -1) for name in names]
    if len(set(names)) != len(names) or any(b <= a for a, b in zip([-1, *columns], columns)):
        return None
    return columns


def _deference_bonus(path: Path, model: Any) -> float:
    """The deference bonus the model's metadata gives (0.0: none)."""
    text = next((p.value for p in model.metadata_props if p.key == DEFERENCE_KEY), None)
    if text is None:
        return 0.0
    try:
        bonus = float(text) if len(text) <= 32 else math.nan
    except ValueError:
        bonus = math.nan
    if not (math.isfinite(bonus) and bonus >= 0.0):
        raise MlbridgeError(f"{path}: {DEFERENCE_KEY} is not a finite bonus of at least 0")
    return bonus

"""A trained Stable-Baselines3 policy as an ONNX model the compiler runs.

The model takes the compiler's own tensors (the names, types and shapes of
the runner's input specs: LLVM's feature names for the inliner, the phase
service's tensors for phase ordering), does what the training wrapper did
(:mod:`mlbridge.train.features`: keep some features, signed log), runs the
actor network and answers the greedy action as one int64, or what the
problem answers for it (``AnswerTable``: a factor, a row of tile sizes,
a copy of the compiler's own decision). So the policy
deployed in the compiler decides exactly as ``model.predict(obs,
deterministic=True)`` does in Python.

A *deference* (:class:`Deference`) adds a bonus to the logit of the action
the compiler itself would take, read from one of its tensors: with a bonus
of 0 the model is the policy, and the larger it is, the more confident the
policy must be to overrule the compiler (an infinite bonus is the
compiler's own heuristic). It may also name a flag input where the model
answers the compiler's action outright (``Deferral``). The
model's metadata keeps the bonus under :data:`DEFERENCE_KEY`, so that
fine-tuning starts from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from mlbridge.onnx_tools import export_torch
from mlbridge.problems.capabilities import Answer
from mlbridge.tensor_spec import TensorSpec
from mlbridge.train.masking import masked_logits

#: The ONNX metadata key of a deployed model's deference bonus.
DEFERENCE_KEY = "mlbridge.deference_bonus"
#: The ONNX metadata keys of a deference's flag: where the input
#: ``DEFERS_WHEN_KEY`` names is 1, the model answers the input
#: ``DEFERS_TO_KEY`` names, whatever its other inputs, so a compiler may
#: skip computing them there (the LLVM plugin does:
#: src/llvm/InlineRunners.h).
DEFERS_WHEN_KEY = "mlbridge.defers_when"
DEFERS_TO_KEY = "mlbridge.defers_to"


@dataclass(frozen=True)
class Deference:
    """A logit bonus for the compiler's own choice: ``index`` is where the
    compiler's action is in the flattened deployed inputs, ``bonus`` what
    its logit gains (>= 0)."""

    index: int
    bonus: float
    #: Where a 0/1 flag is in the flattened deployed inputs: where it is 1
    #: the model answers the compiler's action, whatever the bonus (None:
    #: no flag).
    when: Optional[int] = None

    def __post_init__(self) -> None:
        if not (self.bonus >= 0.0 and math.isfinite(self.bonus)):
            raise ValueError(f"a deference bonus is finite and at least 0, not {self.bonus}")


def answer_rows(
    answers: Sequence[Answer], inputs: Sequence[TensorSpec]
) -> Tuple[int, List[Union[List[int], int]]]:
    """The answer table of a problem's ``answers`` over ``inputs``: the
    answer's element count, and per action its values or the index of the
    input it copies."""
    names = [s.name for s in inputs]
    rows: List[Union[List[int], int]] = []
    for answer in answers:
        if isinstance(answer, str):
            if answer not in names:
                raise ValueError(f"the answer copies {answer!r}, which is no input")
            rows.append(names.index(answer))
        else:
            rows.append([int(v) for v in np.array(answer, dtype=np.int64).reshape(-1)])
    sizes = {inputs[r].element_count if isinstance(r, int) else len(r) for r in rows}
    if len(sizes) != 1:
        raise ValueError(f"the answers have different sizes {sorted(sizes)}")
    return sizes.pop(), rows


def deployable(
    policy: Any,
    keep: Optional[Sequence[int]] = None,
    mask: Optional[Sequence[int]] = None,
    answers: Optional[Tuple[int, List[Union[List[int], int]]]] = None,
    deference: Optional[Deference] = None,
) -> Any:
    """A torch module: compiler tensors (in spec order) -> greedy action [1],
    or the answer of that action (``answers``, :func:`answer_rows`).

    ``policy`` is an SB3 ``ActorCriticPolicy`` over a flat Box observation;
    ``keep`` indexes the concatenation of the flattened inputs (None: all);
    ``mask`` indexes the kept features saying which actions are legal (None:
    all are), as :mod:`mlbridge.train.masking` does in training;
    ``deference`` favours the compiler's own action (None: none).
    """
    import torch

    class DeployedPolicy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.actor = policy.mlp_extractor.policy_net
            self.action_net = policy.action_net
            self.keep = None if keep is None else torch.tensor(list(keep), dtype=torch.int64)
            self.mask = None if mask is None else torch.tensor(list(mask), dtype=torch.int64)
            actions = int(policy.action_net.out_features)
            self.deference = deference
            if deference is not None:
                # One row per action: the bonus where the compiler's action is.
                self.preferred = torch.eye(actions, dtype=torch.float32) * deference.bonus
                self.onehot = torch.eye(actions, dtype=torch.float32)
                self.last_action = float(actions - 1)
            # The answer table's rows: a constant, or the index of the
            # input it copies (the compiler's own decision).
            self.size = 0 if answers is None else answers[0]
            self.rows = (
                None
                if answers is None
                else [
                    r if isinstance(r, int) else torch.tensor([r], dtype=torch.int64)
                    for r in answers[1]
                ]
            )

        def forward(self, *inputs: Any) -> Any:
            flat = torch.cat([x.reshape(-1) for x in inputs]).to(torch.float32)
            raw = flat if self.keep is None else torch.index_select(flat, 0, self.keep)
            x = torch.sign(raw) * torch.log(torch.abs(raw) + 1.0)
            logits = self.action_net(self.actor(x.unsqueeze(0)))
            if self.deference is not None:
                compiler = torch.clamp(flat[self.deference.index], 0.0, self.last_action)
                row = compiler.to(torch.int64).reshape(1)
                logits = logits + torch.index_select(self.preferred, 0, row)
            if self.mask is not None:
                logits = masked_logits(logits, torch.index_select(x, 0, self.mask).unsqueeze(0))
            if self.deference is not None and self.deference.when is not None:
                # Where the flag is 1 the logits become the compiler's action
                # one-hot (Mul and Add: the operators mlbridge-aot compiles).
                flag = torch.clamp(flat[self.deference.when], 0.0, 1.0)
                chosen = torch.index_select(self.onehot, 0, row)
                logits = logits * (1.0 - flag) + chosen * flag
            action = torch.argmax(logits, dim=1)
            if self.rows is None:
                return action
            # The table indexed by the action: Concat and Gather in ONNX.
            table = torch.cat(
                [
                    inputs[r].reshape(1, self.size).to(torch.int64) if isinstance(r, int) else r
                    for r in self.rows
                ]
            )
            return torch.index_select(table, 0, action).reshape(self.size)

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
    answers: Optional[Sequence[Answer]] = None,
    deference: Optional[Deference] = None,
) -> None:
    """Writes ``policy`` (see :func:`deployable`) as ONNX at ``path`` with
    ``inputs`` and one output ``output``, checked against them: int64 [1],
    the action, or the action's answer (``answers``: the problem's)."""
    import onnx
    import torch

    table = None if answers is None else answer_rows(answers, inputs)
    with torch.no_grad():
        export_torch(
            deployable(policy, keep, mask, table, deference),
            str(path),
            inputs,
            [TensorSpec(output, "int64_t", (1 if table is None else table[0],))],
            opset=13,
        )
    if deference is not None:
        model = onnx.load(str(path))
        onnx.helper.set_model_props(model, deference_metadata(deference, inputs, table is None))
        onnx.save(model, str(path))


def deference_metadata(
    deference: Deference, inputs: Sequence[TensorSpec], answers_action: bool
) -> Dict[str, str]:
    """The metadata of a model deferring by ``deference`` over ``inputs``:
    its bonus, and where it has a flag and answers its action itself
    (``answers_action``: no answer table), the flag's and the compiler's
    action's input names (:data:`DEFERS_WHEN_KEY`)."""
    props = {DEFERENCE_KEY: repr(deference.bonus)}
    if deference.when is not None and answers_action:
        props[DEFERS_WHEN_KEY] = _scalar_input(inputs, deference.when)
        props[DEFERS_TO_KEY] = _scalar_input(inputs, deference.index)
    return props


def _scalar_input(inputs: Sequence[TensorSpec], index: int) -> str:
    """The name of the one-element input at ``index`` of the flattened
    ``inputs``."""
    start = 0
    for spec in inputs:
        if start == index and spec.element_count == 1:
            return spec.name
        start += spec.element_count
    raise ValueError(f"no one-element input starts at flattened index {index}")

"""PPO's validation curve: the policy measured on the validation programs
at every checkpoint, the best kept, early stopping
(:mod:`mlbridge.train.validation_curve`; docs/training.md).

The curve starts with the compiler's own heuristic (step 0, ratio 1.0 by
construction, no policy file), or, when training starts from a policy
(fine-tuning), with that policy measured: it stays ``policy.onnx`` unless
a checkpoint beats it. At each checkpoint the current policy is
exported and measured by the problem's ``validate`` measure; the best
becomes ``policy.onnx``. Training stops after ``patience`` checkpoints
without a better one. A run that never beats the heuristic writes no
policy: the compiler's default is what it found best.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

from stable_baselines3.common.callbacks import BaseCallback

from mlbridge.train.validation_curve import ValidationCurve

#: policy.onnx -> (ratio to the heuristic, ratio per project).
Measure = Callable[[Path], Tuple[float, Dict[str, float]]]
#: (the SB3 policy, where to write it as ONNX) -> None.
Export = Callable[[Any, Path], None]


@dataclass(frozen=True)
class CheckpointPoint:
    """One line of PPO's ``curve.jsonl``."""

    steps: int
    validation_ratio: float
    per_project: Dict[str, float] = field(default_factory=dict)
    best: bool = False


class ValidationCallback(BaseCallback):
    """Measures the policy every ``every`` calls (the checkpoints'
    period) and stops training once ``patience`` measurements in a row
    did not beat the best."""

    def __init__(
        self,
        out: Path,
        measure: Measure,
        export: Export,
        every: int,
        patience: int,
        say: Optional[Callable[[str], None]] = None,
        initial: Optional[Path] = None,
    ) -> None:
        super().__init__()
        if every < 1 or patience < 1:
            raise ValueError("every and patience must be at least 1")
        self.out = out
        self.curve: ValidationCurve[CheckpointPoint] = ValidationCurve(out, CheckpointPoint)
        self.measure_policy = measure
        self.export = export
        self.every = every
        self.patience = patience
        self.say = say or (lambda _line: None)
        if self.curve.points:
            return
        if initial is None:
            self._record(CheckpointPoint(0, 1.0, {}, True))
        else:
            self._measure(0, lambda candidate: shutil.copyfile(initial, candidate))

    @property
    def exhausted(self) -> bool:
        """Whether ``patience`` measurements in a row did not beat the best."""
        return self.curve.since_best() >= self.patience

    def _record(self, point: CheckpointPoint) -> None:
        self.curve.record(point)
        self.say(
            f"validation at {point.steps} steps: {point.validation_ratio:.4f}x the heuristic"
            + (" (best)" if point.best else "")
        )

    def validate(self, model: Any) -> None:
        """Measures ``model``'s policy as it is now, unless its steps already are."""
        steps = int(model.num_timesteps)
        if any(p.steps == steps for p in self.curve.points):
            return
        self._measure(steps, lambda candidate: self.export(model.policy, candidate))

    def _measure(self, steps: int, write: Callable[[Path], object]) -> None:
        """Measures the policy ``write`` puts in a candidate file, kept if best."""
        candidate = self.out / f"validation-{steps}.onnx"
        write(candidate)
        ratio, per_project = self.measure_policy(candidate)
        better = self.curve.keep(candidate, ratio)
        self._record(CheckpointPoint(steps, ratio, per_project, better))

    def _on_step(self) -> bool:
        if self.n_calls % self.every == 0:
            self.validate(self.model)
        return not self.exhausted

    @property
    def best(self) -> CheckpointPoint:
        """The best point (step 0, the heuristic, at first)."""
        best = self.curve.best
        assert best is not None  # step 0 is recorded at construction
        return best

    def summary(self) -> Dict[str, Any]:
        """What ``run.json`` says of the validation."""
        return {
            "best_steps": self.best.steps,
            "best_ratio": self.best.validation_ratio,
            "points": len(self.curve.points),
            "stopped_early": self.exhausted,
        }

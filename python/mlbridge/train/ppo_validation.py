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

With several deference bonuses (:class:`mlbridge.train.export.Deference`:
how much the policy defers to the compiler's own decision), each
checkpoint is measured once per bonus, and the checkpoint's point is its
best bonus (the largest of equal ratios: closest to the compiler).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from stable_baselines3.common.callbacks import BaseCallback

from mlbridge.train.validation_curve import ValidationCurve

#: policy.onnx -> (ratio to the heuristic, ratio per project).
Measure = Callable[[Path], Tuple[float, Dict[str, float]]]
#: (the SB3 policy, where to write it as ONNX, deference bonus) -> None.
Export = Callable[[Any, Path, float], None]


@dataclass(frozen=True)
class CheckpointPoint:
    """One line of PPO's ``curve.jsonl``."""

    steps: int
    validation_ratio: float
    per_project: Dict[str, float] = field(default_factory=dict)
    best: bool = False
    #: The deference bonus of the measured policy (the best of the tried ones).
    deference: float = 0.0
    #: With several bonuses: the ratio of each (bonus as text -> ratio).
    per_deference: Dict[str, float] = field(default_factory=dict)


class ValidationCallback(BaseCallback):
    """Measures the policy every ``every`` calls (the checkpoints'
    period) and stops training once ``patience`` measurements in a row
    did not beat the best. ``bonuses``: the deference bonuses tried at
    each checkpoint (None: the one the curve kept, else ``initial_bonus``);
    ``initial``, the policy training starts from, and its own bonus
    ``initial_bonus``, measured as it is."""

    def __init__(
        self,
        out: Path,
        measure: Measure,
        export: Export,
        every: int,
        patience: int,
        say: Optional[Callable[[str], None]] = None,
        initial: Optional[Path] = None,
        bonuses: Optional[Sequence[float]] = None,
        initial_bonus: float = 0.0,
        policy: Any = None,
    ) -> None:
        super().__init__()
        if every < 1 or patience < 1:
            raise ValueError("every and patience must be at least 1")
        if bonuses is not None and not bonuses:
            raise ValueError("at least one deference bonus")
        self.out = out
        self.curve: ValidationCurve[CheckpointPoint] = ValidationCurve(out, CheckpointPoint)
        if bonuses is None:
            # The bonus the curve kept (a resumed run), else the start's.
            kept = self.curve.best
            bonuses = (kept.deference if kept is not None else initial_bonus,)
        #: Largest first: of equal ratios, the first measured is kept.
        self.bonuses = sorted(set(bonuses), reverse=True)
        self.measure_policy = measure
        self.export = export
        self.every = every
        self.patience = patience
        self.say = say or (lambda _line: None)
        if self.curve.points:
            return
        if initial is None:
            self._record(CheckpointPoint(0, 1.0, {}, True))
            return

        def start(candidate: Path, bonus: float) -> None:
            if bonus == initial_bonus or policy is None:
                shutil.copyfile(initial, candidate)
            else:
                self.export(policy, candidate, bonus)

        # The starting model as it is, and with each bonus tried.
        at_start = {initial_bonus} | (set(self.bonuses) if policy is not None else set())
        bonuses_at_start = sorted(at_start, reverse=True)
        self._measure(0, start, bonuses_at_start)

    @property
    def exhausted(self) -> bool:
        """Whether ``patience`` measurements in a row did not beat the best."""
        return self.curve.since_best() >= self.patience

    def _record(self, point: CheckpointPoint) -> None:
        self.curve.record(point)
        self.say(
            f"validation at {point.steps} steps: {point.validation_ratio:.4f}x the heuristic"
            + (f" (deference {point.deference:g})" if point.per_deference else "")
            + (" (best)" if point.best else "")
        )

    def validate(self, model: Any) -> None:
        """Measures ``model``'s policy as it is now, unless its steps already are."""
        steps = int(model.num_timesteps)
        if any(p.steps == steps for p in self.curve.points):
            return
        self._measure(steps, lambda candidate, bonus: self.export(model.policy, candidate, bonus))

    def _measure(
        self,
        steps: int,
        write: Callable[[Path, float], object],
        bonuses: Optional[Sequence[float]] = None,
    ) -> None:
        """Measures the policy ``write`` puts in a candidate file with each
        bonus; the best is kept if it beats the curve's best."""
        tried: Dict[str, float] = {}
        best: Optional[Tuple[float, Dict[str, float], float, Path]] = None
        for bonus in self.bonuses if bonuses is None else bonuses:
            candidate = self.out / f"validation-{steps}-{bonus:g}.onnx"
            write(candidate, bonus)
            ratio, per_project = self.measure_policy(candidate)
            tried[f"{bonus:g}"] = ratio
            if best is None or ratio < best[0]:
                if best is not None:
                    best[3].unlink(missing_ok=True)
                best = (ratio, per_project, bonus, candidate)
            else:
                candidate.unlink(missing_ok=True)
        assert best is not None
        ratio, per_project, bonus, candidate = best
        better = self.curve.keep(candidate, ratio)
        per_deference = tried if len(tried) > 1 else {}
        self._record(CheckpointPoint(steps, ratio, per_project, better, bonus, per_deference))

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
            "best_deference": self.best.deference,
            "points": len(self.curve.points),
            "stopped_early": self.exhausted,
        }

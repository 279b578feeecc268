"""The validation curve of a training run, for every method that has one.

Each point measures a candidate policy on the validation programs, as a
ratio to the compiler's own heuristic (1.0 is the heuristic; lower is
better), and goes to ``curve.jsonl`` as one JSON line. The best candidate
so far becomes the run's ``policy.onnx``; a worse one is deleted. Training
stops once ``patience`` points in a row did not beat the best. Rounds of
search (:mod:`mlbridge.problems.inlining.size_training`) and PPO's checkpoints
(:mod:`mlbridge.train.ppo_validation`) record their own fields beside
``validation_ratio`` and ``best``.

A run that resumes reads the curve back; a line torn by an interrupted run
is skipped.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, ClassVar, Dict, Generic, List, Optional, Protocol, TypeVar

from mlbridge.corpus.files import MAX_JSON_BYTES, read_capped
from mlbridge.errors import CorpusError
from mlbridge.output_files import open_output_file

CURVE = "curve.jsonl"
POLICY = "policy.onnx"


class CurvePoint(Protocol):
    """A point of the curve: a dataclass with these fields, and others."""

    __dataclass_fields__: ClassVar[Dict[str, Any]]

    @property
    def validation_ratio(self) -> float:
        """The candidate's ratio to the heuristic on the validation programs."""

    @property
    def best(self) -> bool:
        """Whether it beat every point before it."""


Point = TypeVar("Point", bound=CurvePoint)


class ValidationCurve(Generic[Point]):
    """The points of ``out/curve.jsonl`` (``point(**line)`` each) and the
    rule that keeps the best candidate as ``out/policy.onnx``."""

    def __init__(self, out: Path, point: Callable[..., Point]) -> None:
        self.out = out
        self.points: List[Point] = []
        #: Whether the file ends in a line torn by an interrupted run.
        self._torn = False
        path = out / CURVE
        if not path.is_file():
            return
        try:
            text = read_capped(path, MAX_JSON_BYTES).decode("utf-8", errors="replace")
        except CorpusError:
            text = ""
        self._torn = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            try:
                self.points.append(point(**json.loads(line)))
            except (ValueError, TypeError):
                continue  # a line torn by an interrupted run

    @property
    def best(self) -> Optional[Point]:
        """The best point so far, if any."""
        best = [p for p in self.points if p.best]
        return best[-1] if best else None

    @property
    def best_ratio(self) -> float:
        """The best point's ratio (1.0, the heuristic, before any)."""
        best = self.best
        return 1.0 if best is None else best.validation_ratio

    def since_best(self) -> int:
        """Points after the best (all of them when none is best)."""
        best = self.best
        return len(self.points) - (0 if best is None else self.points.index(best) + 1)

    def keep(self, candidate: Path, ratio: float) -> bool:
        """Whether ``ratio`` beats the best point; if so, ``candidate``
        becomes the run's policy, else it is deleted."""
        better = self.best is None or ratio < self.best_ratio
        if better:
            candidate.replace(self.out / POLICY)
        else:
            candidate.unlink(missing_ok=True)
        return better

    def record(self, point: Point) -> None:
        """Appends ``point`` to the curve and its file."""
        self.points.append(point)
        with open_output_file(self.out / CURVE, append=True) as stream:
            line = json.dumps(asdict(point)) + "\n"
            stream.write((("\n" if self._torn else "") + line).encode("utf-8"))
        self._torn = False

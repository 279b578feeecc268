"""PPO's validation curve (mlbridge.train.ppo_validation): the policy
measured at every checkpoint, the best kept as policy.onnx, early stopping
after ``patience`` checkpoints without a better one, and a resumed run
that goes on from its curve. The runs train on a tiny in-process
environment; the measure is scripted, so the curve is known."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("onnx")
pytest.importorskip("gymnasium")

from counts_task import counts_task, tiny_config  # noqa: E402

from mlbridge.train.ppo import TrainConfig, train  # noqa: E402
from mlbridge.train.validation_curve import CURVE, POLICY, ValidationCurve  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def validated_counts():
    with counts_task("validated-counts"):
        yield


class Scripted:
    """A measure answering ``ratios`` in turn; keeps each model's bytes."""

    def __init__(self, ratios: List[float]) -> None:
        self.ratios = list(ratios)
        self.models: List[bytes] = []

    def __call__(self, model: Path):
        self.models.append(model.read_bytes())
        ratio = self.ratios.pop(0)
        return ratio, {"p": ratio}


def _config(
    out: Path,
    timesteps: int,
    patience: int = 3,
    resume: bool = False,
    every: int = 64,
    init: Optional[Path] = None,
) -> TrainConfig:
    return tiny_config(
        "validated-counts",
        out,
        timesteps,
        epochs=1,
        checkpoint_every=every,
        patience=patience,
        resume=resume,
        warm_start=False,
        init=init,
    )


def _curve(out: Path) -> List[Dict[str, object]]:
    return [json.loads(line) for line in (out / CURVE).read_text().splitlines()]


def test_the_best_checkpoint_is_kept_and_training_stops_early(tmp_path):
    measure = Scripted([1.01, 0.98, 0.99, 1.0, 0.985, 0.5])
    lines: List[str] = []
    summary = train(_config(tmp_path, 640), measure, progress=lines.append)
    curve = _curve(tmp_path)
    assert [p["steps"] for p in curve] == [0, 64, 128, 192, 256, 320]
    assert [p["best"] for p in curve] == [True, False, True, False, False, False]
    assert curve[2]["per_project"] == {"p": 0.98}
    # Three checkpoints in a row without a better ratio: stopped at 320 of 640.
    assert summary["timesteps"] == 320 and len(measure.ratios) == 1
    assert summary["validation"] == {
        "best_steps": 128,
        "best_ratio": 0.98,
        "best_deference": 0.0,
        "points": 6,
        "stopped_early": True,
    }
    assert (tmp_path / POLICY).read_bytes() == measure.models[1]
    assert sorted(p.name for p in tmp_path.glob("validation-*.onnx")) == []
    assert len(lines) == 6 and lines[2].endswith("(best)")


def test_no_policy_when_no_checkpoint_beats_the_heuristic(tmp_path):
    measure = Scripted([1.0, 1.02, 1.001])
    summary = train(_config(tmp_path, 640), measure)
    assert summary["policy"] is None and not (tmp_path / POLICY).exists()
    assert summary["validation"]["best_steps"] == 0
    assert summary["timesteps"] == 192


def test_the_final_policy_is_measured_too(tmp_path):
    measure = Scripted([0.99, 0.97])
    summary = train(_config(tmp_path, 192, every=128), measure)
    # A checkpoint at 128; training ends at 192, which is measured.
    assert [p["steps"] for p in _curve(tmp_path)] == [0, 128, 192]
    assert summary["validation"]["best_steps"] == 192
    assert (tmp_path / POLICY).read_bytes() == measure.models[-1]


def test_a_resumed_run_goes_on_from_its_curve(tmp_path):
    train(_config(tmp_path, 128), Scripted([0.99, 1.0]))
    with (tmp_path / CURVE).open("a") as stream:
        stream.write('{"steps": 999, "validation_')  # torn by an interrupted run
    again = Scripted([1.0, 0.95])
    summary = train(_config(tmp_path, 256, resume=True), again)
    assert [p["steps"] for p in _curve_lines(tmp_path)] == [0, 64, 128, 192, 256]
    assert summary["validation"]["best_steps"] == 256 and summary["timesteps"] == 256


def test_a_run_out_of_patience_does_not_train_on(tmp_path):
    train(_config(tmp_path, 640, patience=1), Scripted([1.0]))
    again = Scripted([])
    summary = train(_config(tmp_path, 1280, patience=1, resume=True), again)
    assert summary["timesteps"] == 64 and summary["validation"]["stopped_early"]


def _curve_lines(out: Path) -> List[Dict[str, object]]:
    lines = []
    for line in (out / CURVE).read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue
    return lines


@dataclass(frozen=True)
class _Point:
    round: int
    validation_ratio: float
    best: bool


def test_the_curve_keeps_the_best_candidate(tmp_path):
    curve = ValidationCurve(tmp_path, _Point)
    assert curve.best is None and curve.best_ratio == 1.0 and curve.since_best() == 0
    for number, ratio in enumerate([1.0, 0.9, 0.95]):
        candidate = tmp_path / f"c{number}.onnx"
        candidate.write_text(str(number))
        curve.record(_Point(number, ratio, curve.keep(candidate, ratio)))
        assert not candidate.exists()
    assert (tmp_path / POLICY).read_text() == "1"
    again = ValidationCurve(tmp_path, _Point)
    assert again.points == curve.points and again.best == _Point(1, 0.9, True)
    assert again.since_best() == 1 and again.best_ratio == 0.9


def test_fine_tuning_measures_the_starting_policy_first_and_keeps_it_unless_beaten(tmp_path):
    start = tmp_path / "start.onnx"
    train(_config(tmp_path / "first", 64), Scripted([0.9]))
    (tmp_path / "first" / POLICY).replace(start)
    kept = Scripted([0.99, 1.0, 0.995, 0.999])
    summary = train(_config(tmp_path / "kept", 640, init=start), kept)
    curve = _curve(tmp_path / "kept")
    assert [(p["steps"], p["best"]) for p in curve] == [
        (0, True),
        (64, False),
        (128, False),
        (192, False),
    ]
    assert kept.models[0] == start.read_bytes()
    assert (tmp_path / "kept" / POLICY).read_bytes() == start.read_bytes()
    assert summary["validation"]["best_steps"] == 0 and summary["policy"] is not None
    beaten = Scripted([0.99, 0.98, 1.0, 1.0, 1.0])
    train(_config(tmp_path / "beaten", 640, init=start), beaten)
    assert (tmp_path / "beaten" / POLICY).read_bytes() == beaten.models[1]

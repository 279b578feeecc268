"""Several seeds of one PPO configuration (mlbridge.train.seeds, ``mlbridge
train --seeds``): one run per seed on a toy task with a scripted validation
measure, the best seed's policy kept, a seed without a policy never kept,
finished seeds not run again on resume, and the command's checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("onnx")
pytest.importorskip("gymnasium")

from counts_task import counts_task, tiny_config  # noqa: E402

from mlbridge.errors import MlbridgeError  # noqa: E402
from mlbridge.train.seeds import SEEDS, seed_dir, train_seeds  # noqa: E402

TASK = "seeded-counts"


@pytest.fixture(scope="module", autouse=True)
def task():
    with counts_task(TASK):
        yield


class Scripted:
    """A validation measure answering ``ratios`` in the order it is asked
    (each seed's checkpoints, one seed after the other)."""

    def __init__(self, ratios: List[float]) -> None:
        self.ratios = list(ratios)
        self.asked: List[Path] = []

    def __call__(self, model: Path):
        self.asked.append(model)
        ratio = self.ratios[len(self.asked) - 1]
        return ratio, {"p": ratio}


def test_the_best_seed_with_a_policy_is_kept_and_finished_seeds_are_not_rerun(tmp_path):
    # Two checkpoints each (steps 64 and 128): seed 3 never beats the
    # compiler, seed 5 does at 64, seed 8 does too but by less.
    measure = Scripted([1.02, 1.01, 1.00, 0.98, 0.995, 0.99])
    config = tiny_config(TASK, tmp_path, 128, warm_start=False)
    report = train_seeds(config, (3, 5, 8), measure)
    assert len(measure.asked) == 6
    assert [(r["seed"], r["best_ratio"]) for r in report["seeds"]] == [
        (3, 1.0),  # the compiler's own heuristic (no checkpoint beat it)
        (5, 0.98),
        (8, 0.99),
    ]
    assert report["seeds"][0]["policy"] is None
    assert report["kept"] == 5
    kept = (seed_dir(tmp_path, 5) / "policy.onnx").read_bytes()
    assert (tmp_path / "policy.onnx").read_bytes() == kept
    assert json.loads((tmp_path / SEEDS).read_text()) == report
    # Each seed's run is the seed's own.
    runs = [json.loads((seed_dir(tmp_path, s) / "run.json").read_text()) for s in (3, 5, 8)]
    assert [r["config"]["seed"] for r in runs] == [3, 5, 8]
    # Resumed: the finished seeds are read back, not trained nor measured.
    again = train_seeds(
        tiny_config(TASK, tmp_path, 128, warm_start=False, resume=True), (3, 5, 8), Scripted([])
    )
    assert again == report


def test_no_seed_beating_the_compiler_keeps_no_policy(tmp_path):
    (tmp_path / "policy.onnx").write_bytes(b"an earlier run's")
    report = train_seeds(
        tiny_config(TASK, tmp_path, 64, warm_start=False), (1,), Scripted([1.01, 1.0])
    )
    assert report["kept"] is None and report["policy"] is None
    assert not (tmp_path / "policy.onnx").exists()


def test_seeds_need_validation_and_distinct_seeds(tmp_path):
    config = tiny_config(TASK, tmp_path, 64, warm_start=False)
    with pytest.raises(MlbridgeError, match="need validation"):
        train_seeds(config, (0, 1), None)
    with pytest.raises(MlbridgeError, match="distinct"):
        train_seeds(config, (1, 1), Scripted([]))


def test_the_command_checks_its_seeds(tmp_path, capsys):
    from mlbridge import cli
    from mlbridge.cli_errors import USAGE

    common = ["train", "inlining", "--out", str(tmp_path / "run")]
    for bad in ("1,x", "2,2", ""):
        with pytest.raises(SystemExit) as stop:
            cli.main([*common, "--seeds", bad])
        assert stop.value.code == USAGE
    capsys.readouterr()
    assert cli.main([*common, "--seeds", "0,1", "--seed", "2"]) == USAGE
    assert "give one of them" in capsys.readouterr().err
    assert cli.main([*common, "--seeds", "0,1", "--method", "search"]) == USAGE
    assert "--seeds is for training with --method ppo" in capsys.readouterr().err

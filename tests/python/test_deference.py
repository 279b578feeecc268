"""Deference to the compiler's own decision (mlbridge.train.export.Deference,
``mlbridge train --deference``): the deployed model adds a bonus to the
logit of the compiler's action; with 0 it is the policy, with a large one
the compiler; a flag input (a problem's ``Deferral``) makes the compiler's
action the answer; the AOT-compiled model decides as ONNX Runtime does; the
bonus survives export and fine-tuning; validation measures each bonus at
every checkpoint and keeps the best, the largest of equal ratios."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("gymnasium")

from counts_task import Counts, counts_task, tiny_config  # noqa: E402

from mlbridge.errors import MlbridgeError  # noqa: E402
from mlbridge.problems.capabilities import CompilerDecision, Deferral  # noqa: E402
from mlbridge.train.export import DEFERENCE_KEY, DEFERS_TO_KEY, DEFERS_WHEN_KEY  # noqa: E402
from mlbridge.train.ppo import train  # noqa: E402
from mlbridge.train.ppo_init import load_actor  # noqa: E402
from mlbridge.train.tasks import export, get_task  # noqa: E402
from mlbridge.train.validation_curve import CURVE, POLICY  # noqa: E402

NAMES = list(Counts.feature_names)
#: The toy task's "compiler decision": feature d (its action, clamped to 0..1).
TASK = "deferring-counts"


#: The toy task whose deployed model also reads a flag "odr": where it is
#: 1, the model answers the compiler's action outright.
FLAGGED = "flag-deferring-counts"


@pytest.fixture(scope="module", autouse=True)
def task():
    decision = CompilerDecision("d")
    with counts_task(TASK, capabilities=(decision,)):
        with counts_task("undeferring-counts"):
            with counts_task(FLAGGED, capabilities=(decision, Deferral("odr"))):
                yield


@pytest.fixture(scope="module")
def policy():
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", Counts(), n_steps=64, batch_size=64, seed=3, device="cpu")
    return model.policy


def _rows() -> np.ndarray:
    rows = np.random.default_rng(1).integers(-50, 5000, (300, 4))
    rows[:, 3] = np.random.default_rng(2).integers(0, 2, 300)  # the compiler's 0 or 1
    return rows


def _logits(policy, rows: np.ndarray) -> np.ndarray:
    import torch

    x = np.sign(rows) * np.log(np.abs(rows) + 1.0)
    with torch.no_grad():
        latent = policy.mlp_extractor.policy_net(torch.as_tensor(x, dtype=torch.float32))
        return policy.action_net(latent).numpy()


def _decisions(model_file: Path, rows: np.ndarray) -> List[int]:
    session = ort.InferenceSession(str(model_file))
    return [
        int(session.run(None, {n: np.asarray([v], np.int64) for n, v in zip(NAMES, row)})[0][0])
        for row in rows
    ]


def test_the_bonus_goes_to_the_compilers_action(policy, tmp_path):
    rows = _rows()
    logits = _logits(policy, rows)
    margin = logits[:, 1] - logits[:, 0]
    for bonus in (0.0, 0.05, float(np.median(np.abs(margin))), 1e6):
        path = tmp_path / f"m{bonus}.onnx"
        export(get_task(TASK), policy, path, NAMES, bonus)
        compiler = rows[:, 3]
        expected = np.argmax(logits + bonus * np.eye(2)[compiler], axis=1)
        assert _decisions(path, rows) == expected.tolist()
    # Overruled where the policy was sure enough; the compiler everywhere else.
    sure = np.abs(margin) > float(np.median(np.abs(margin)))
    assert 0 < sure.sum() < len(rows)
    assert _decisions(tmp_path / "m1000000.0.onnx", rows) == rows[:, 3].tolist()


def _flagged(rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``rows`` with a 0/1 flag column after them."""
    flags = np.random.default_rng(3).integers(0, 2, (len(rows), 1))
    return np.hstack([rows, flags]), flags[:, 0]


def _flagged_decisions(model_file: Path, rows: np.ndarray) -> List[int]:
    session = ort.InferenceSession(str(model_file))
    names = [*NAMES, "odr"]
    return [
        int(session.run(None, {n: np.asarray([v], np.int64) for n, v in zip(names, row)})[0][0])
        for row in rows
    ]


def test_the_flag_makes_the_compilers_action_the_answer(policy, tmp_path):
    rows, flags = _flagged(_rows())
    logits = _logits(policy, rows[:, :4])
    compiler = rows[:, 3]
    margin = np.abs(logits[:, 1] - logits[:, 0])
    for bonus in (0.0, float(np.median(margin))):
        path = tmp_path / f"m{bonus}.onnx"
        export(get_task(FLAGGED), policy, path, NAMES, bonus)
        model = onnx.load(str(path))
        assert [i.name for i in model.graph.input] == [*NAMES, "odr"]
        # The model says where it answers the compiler's action, for a
        # compiler to skip computing the other inputs there.
        meta = {p.key: p.value for p in model.metadata_props}
        assert (meta[DEFERS_WHEN_KEY], meta[DEFERS_TO_KEY]) == ("odr", "d")
        unflagged = np.argmax(logits + bonus * np.eye(2)[compiler], axis=1)
        expected = np.where(flags == 1, compiler, unflagged)
        got = _flagged_decisions(path, rows)
        assert got == expected.tolist()
        # The flag changed answers: the policy overrules the compiler there.
        assert (unflagged != compiler)[flags == 1].any()
    # No flag, no bonus: the policy itself.
    rows[:, 4] = 0
    assert _flagged_decisions(tmp_path / "m0.0.onnx", rows) == np.argmax(logits, 1).tolist()


def test_fine_tuning_reads_a_model_with_or_without_the_flag(policy, tmp_path):
    from stable_baselines3 import PPO

    flagged, plain = tmp_path / "flagged.onnx", tmp_path / "plain.onnx"
    export(get_task(FLAGGED), policy, flagged, NAMES, 0.5)
    export(get_task(TASK), policy, plain, NAMES, 0.5)
    assert DEFERS_WHEN_KEY not in {p.key for p in onnx.load(str(plain)).metadata_props}
    fresh = PPO("MlpPolicy", Counts(), n_steps=64, batch_size=64, seed=9, device="cpu")
    for path in (flagged, plain):
        assert load_actor(fresh.policy, path, NAMES, "odr")["deference"] == 0.5
    with pytest.raises(MlbridgeError, match="reads 5 inputs"):
        load_actor(fresh.policy, flagged, NAMES)
    with pytest.raises(MlbridgeError, match="reads 5 inputs"):
        load_actor(fresh.policy, flagged, NAMES, "other")


def test_a_task_without_the_compilers_action_has_no_deference(policy, tmp_path):
    with pytest.raises(MlbridgeError, match="compiler's own action"):
        export(get_task("undeferring-counts"), policy, tmp_path / "m.onnx", NAMES, 1.0)
    export(get_task("undeferring-counts"), policy, tmp_path / "m.onnx", NAMES, 0.0)


@pytest.mark.slow
def test_the_aot_model_decides_as_onnx_runtime(policy, tmp_path):
    from test_aot import build_generated, compilers, run_program

    from mlbridge.aot import compile_model

    if not compilers():
        pytest.skip("no C++ compiler")
    path = tmp_path / "m.onnx"
    export(get_task(FLAGGED), policy, path, NAMES, 0.3)
    generated = compile_model(onnx.load(str(path)))
    # The module says what the model says of itself (src/core/AotModelRunner).
    assert '"mlbridge.defers_when", "odr",' in generated.source
    rows = _flagged(_rows()[:40])[0]
    expected = _flagged_decisions(path, rows)
    program = build_generated(generated, tmp_path / "aot", compilers()[0])
    got = [
        int(run_program(generated, program, [np.asarray([v], np.int64) for v in row])[0][0])
        for row in rows
    ]
    assert got == expected


def test_the_bonus_is_kept_in_the_model_and_read_back(policy, tmp_path):
    from stable_baselines3 import PPO

    path = tmp_path / "m.onnx"
    export(get_task(TASK), policy, path, NAMES, 0.75)
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert float(meta[DEFERENCE_KEY]) == 0.75
    fresh = PPO("MlpPolicy", Counts(), n_steps=64, batch_size=64, seed=9, device="cpu")
    assert load_actor(fresh.policy, path, NAMES)["deference"] == 0.75
    again = tmp_path / "again.onnx"
    export(get_task(TASK), fresh.policy, again, NAMES, 0.75)
    rows = _rows()
    assert _decisions(again, rows) == _decisions(path, rows)
    for bad in ("-1", "nan", "inf", "x", "1" * 40):
        model = onnx.load(str(path))
        onnx.helper.set_model_props(model, {DEFERENCE_KEY: bad})
        onnx.save(model, str(tmp_path / "bad.onnx"))
        with pytest.raises(MlbridgeError, match=DEFERENCE_KEY):
            load_actor(fresh.policy, tmp_path / "bad.onnx", NAMES)


class PerBonus:
    """A measure answering a ratio per (checkpoint, bonus): ``ratios[i]``
    maps each bonus to the ratio of the i-th checkpoint measured."""

    def __init__(self, ratios: List[Dict[float, float]]) -> None:
        self.ratios = ratios
        self.seen: List[Tuple[int, float, bytes]] = []

    def __call__(self, model: Path):
        bonus = float(model.stem.rsplit("-", 1)[1])
        steps = int(model.stem.split("-")[1])
        index = len({s for s, _, _ in self.seen} | {steps}) - 1
        ratio = self.ratios[index][bonus]
        self.seen.append((steps, bonus, model.read_bytes()))
        return ratio, {"p": ratio}


def _curve(out: Path) -> List[Dict[str, object]]:
    return [json.loads(line) for line in (out / CURVE).read_text().splitlines()]


def test_validation_keeps_the_best_bonus_of_each_checkpoint(tmp_path):
    measure = PerBonus(
        [
            {0.0: 1.01, 0.5: 0.99, 2.0: 0.995},
            {0.0: 0.97, 0.5: 0.98, 2.0: 0.97},  # a tie: the larger bonus
            {0.0: 1.0, 0.5: 1.0, 2.0: 1.0},
        ]
    )
    config = tiny_config(TASK, tmp_path, 192, warm_start=False, deference=(0.0, 0.5, 2.0))
    summary = train(config, measure)
    curve = _curve(tmp_path)
    assert [(p["steps"], p["deference"], p["best"]) for p in curve] == [
        (0, 0.0, True),
        (64, 0.5, True),
        (128, 2.0, True),
        (192, 2.0, False),
    ]
    assert curve[1]["per_deference"] == {"2": 0.995, "0.5": 0.99, "0": 1.01}
    # Each checkpoint measured with every bonus, the largest first.
    assert [b for s, b, _ in measure.seen if s == 64] == [2.0, 0.5, 0.0]
    kept = next(m for s, b, m in measure.seen if (s, b) == (128, 2.0))
    assert (tmp_path / POLICY).read_bytes() == kept
    assert summary["validation"]["best_deference"] == 2.0
    assert list(tmp_path.glob("validation-*.onnx")) == []


def test_several_bonuses_need_validation(tmp_path):
    with pytest.raises(MlbridgeError, match="need validation"):
        train(tiny_config(TASK, tmp_path, 64, warm_start=False, deference=(0.0, 1.0)))
    summary = train(tiny_config(TASK, tmp_path / "one", 64, warm_start=False, deference=(0.4,)))
    model = onnx.load(summary["policy"])
    assert float({p.key: p.value for p in model.metadata_props}[DEFERENCE_KEY]) == 0.4


def test_fine_tuning_starts_from_the_models_own_bonus(policy, tmp_path):
    start = tmp_path / "start.onnx"
    export(get_task(TASK), policy, start, NAMES, 0.25)
    measure = PerBonus([{0.25: 0.99}, {0.25: 1.0}])
    # The task has a warm start, which the model replaces.
    summary = train(tiny_config(TASK, tmp_path / "tuned", 64, init=start), measure)
    assert summary["warm_start"]["init"] == str(start)
    assert summary["warm_start"]["deference"] == 0.25
    assert [(s, b) for s, b, _ in measure.seen] == [(0, 0.25), (64, 0.25)]
    # The start is measured as it is, its own file.
    assert measure.seen[0][2] == start.read_bytes()
    grid = PerBonus([{0.25: 0.99, 1.0: 0.98}, {0.25: 1.0, 1.0: 1.0}])
    train(tiny_config(TASK, tmp_path / "grid", 64, init=start, deference=(1.0,)), grid)
    assert [(s, b) for s, b, _ in grid.seen] == [(0, 1.0), (0, 0.25), (64, 1.0)]
    curve = _curve(tmp_path / "grid")
    assert curve[0]["deference"] == 1.0 and curve[0]["best"]


def test_the_command_checks_its_bonuses(tmp_path, capsys):
    from mlbridge import cli
    from mlbridge.cli_errors import USAGE

    common = ["train", "inlining", "--out", str(tmp_path / "run")]
    for bad in ("-1", "1,x", "inf", "nan", ""):
        with pytest.raises(SystemExit) as stop:
            cli.main([*common, "--deference", bad])
        assert stop.value.code == USAGE
        assert "--deference" in capsys.readouterr().err
    assert cli.main([*common, "--method", "search", "--deference", "1"]) == USAGE
    assert "--deference is for --method ppo" in capsys.readouterr().err


def test_a_resumed_run_goes_on_with_the_bonus_its_curve_kept(tmp_path):
    first = PerBonus([{0.0: 0.99, 0.5: 0.98}])
    train(tiny_config(TASK, tmp_path, 64, warm_start=False, deference=(0.0, 0.5)), first)
    again = PerBonus([{0.5: 0.97}])
    train(tiny_config(TASK, tmp_path, 128, warm_start=False, resume=True), again)
    assert [(s, b) for s, b, _ in again.seen] == [(128, 0.5)]
    assert [p["deference"] for p in _curve(tmp_path)] == [0.0, 0.5, 0.5]

"""mlbridge.train: PPO runs that checkpoint and resume, the ONNX export of a
trained policy (same decisions as SB3's), and the policy deployed in clang-19.

Runs are tiny (a few hundred steps): what is tested is the machinery, not
the policy's quality (docs/training.md has the long runs).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
gymnasium = pytest.importorskip("gymnasium")
ort = pytest.importorskip("onnxruntime")

from counts_task import Counts, tiny_config  # noqa: E402

from mlbridge.cli import train_command as train_cli  # noqa: E402
from mlbridge.gym import pool  # noqa: E402
from mlbridge.tensor_spec import TensorSpec  # noqa: E402
from mlbridge.train.export import export_policy  # noqa: E402
from mlbridge.train.features import SignedLogFeatures, kept_features, signed_log  # noqa: E402
from mlbridge.train.ppo import TrainConfig, latest_checkpoint, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "python" / "mlbridge" / "corpus" / "bundled"
needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None, reason="needs clang-19")


def test_backends_agree_with_the_pool():
    assert train_cli.BACKENDS == pool.BACKENDS


def test_kept_features_refuse_unknown_names():
    assert kept_features(["a", "b", "c"], ["b"]) == [0, 2]
    with pytest.raises(ValueError, match="zzz"):
        kept_features(["a", "b"], ["zzz"])


def test_the_wrapper_keeps_and_transforms():
    env = SignedLogFeatures(drop=["b"])(Counts())
    obs, _ = env.reset(seed=1)
    assert env.feature_names == ["a", "c", "d"]
    assert obs.shape == (3,) and obs.dtype == np.float32
    raw = env.unwrapped._obs
    assert np.allclose(obs, signed_log(raw[[0, 2, 3]]))


def test_exported_policy_decides_as_sb3(tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    env = SignedLogFeatures(drop=["b"])(Counts())
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # no SB3-* directory in /tmp
    model.learn(128)
    path = tmp_path / "p.onnx"
    specs = [TensorSpec(n, "int64_t", (1,)) for n in "abcd"]
    export_policy(model.policy, path, specs, "decision", keep=[0, 2, 3])
    session = ort.InferenceSession(str(path))
    assert [i.name for i in session.get_inputs()] == list("abcd")
    rng = np.random.default_rng(0)
    for _ in range(300):
        raw = rng.integers(-1000, 1_000_000, 4)
        (got,) = session.run(None, {n: np.asarray([v], np.int64) for n, v in zip("abcd", raw)})
        want, _ = model.predict(signed_log(raw[[0, 2, 3]]), deterministic=True)
        assert got.dtype == np.int64 and got.shape == (1,)
        assert int(got[0]) == int(want)


def _config(out: Path, timesteps: int, resume: bool = False) -> TrainConfig:
    modules = sorted(_bundled_modules())
    return tiny_config(
        "inlining",
        out,
        timesteps,
        warm_start_steps=100,
        resume=resume,
        env_kwargs={"modules": modules},
    )


def _bundled_modules():
    from mlbridge.corpus.program import TRAIN, Program
    from mlbridge.gym.modules import default_cache_dir, prepare_modules

    programs = [Program(p.stem, (p,), (), TRAIN) for p in sorted(BUNDLED.glob("*.c"))]
    return [str(m.bitcode) for m in prepare_modules(programs, default_cache_dir())]


@needs_clang
@pytest.mark.slow
def test_a_run_checkpoints_logs_exports_and_resumes(tmp_path):
    out = tmp_path / "run"
    first = train(_config(out, 128))
    assert first["timesteps"] == 128 and first["resumed_from"] is None
    # the warm start taught the actor LLVM's own decision
    assert first["warm_start"]["samples"] == 200
    assert first["warm_start"]["agreement"] > 0.9
    assert latest_checkpoint(out / "checkpoints").name == "ppo_128_steps.zip"
    rows = list(csv.DictReader(open(out / "logs" / "progress.csv")))
    assert rows and "train/entropy_loss" in rows[-1]
    session = ort.InferenceSession(str(out / "policy.onnx"))
    names = [i.name for i in session.get_inputs()]
    assert "inlining_default" in names and "callee_basic_block_count" not in names
    assert [o.name for o in session.get_outputs()] == ["inlining_decision"]

    second = train(_config(out, 192, resume=True))
    assert second["resumed_from"].endswith("ppo_128_steps.zip")
    assert second["timesteps"] == 192
    assert json.loads((out / "run.json").read_text())["timesteps"] == 192


def test_each_round_of_the_deployment_compiles_every_way_once_in_a_rotated_order():
    """Compile CPU is the fastest of the rounds; in each round every
    configuration compiles once, and which goes first moves round by round."""
    from mlbridge.problems.inlining.deploy import CONFIGS, rounds

    order = rounds(CONFIGS, 4)
    assert len(order) == 4
    assert all(sorted(r) == sorted(CONFIGS) for r in order)
    assert [r[0] for r in order] == [*CONFIGS, CONFIGS[0]]
    assert order[1][-1] == order[0][0]
    assert rounds(CONFIGS, 0) == []


@needs_clang
@pytest.mark.slow
def test_the_policy_deploys_in_clang(tmp_path):
    """policy.onnx in the plugin under ONNX Runtime and AOT-compiled: same code."""
    from mlbridge.gym.modules import Module
    from mlbridge.native import NativeError, plugin_path
    from mlbridge.problems.inlining.deploy import evaluate_inlining

    try:
        plugin = plugin_path()
    except NativeError as err:
        pytest.skip(f"no plugin: {err}")
    out = tmp_path / "run"
    train(_config(out, 64))
    bitcode = Path(_bundled_modules()[0])
    report = evaluate_inlining(
        out / "policy.onnx", [Module("one", bitcode, "one", "held-out")], plugin, tmp_path / "d"
    )
    (row,) = report["modules"]
    assert row["-Oz"]["text"] > 0 and row["onnx"]["text"] > 0
    # One C module: no COMDAT group, so linked is the object's own .text.
    assert report["projects"]["one"]["-Oz"] == row["-Oz"]["text"]
    assert report["projects"]["one"]["onnx"] == row["onnx"]["text"]
    assert report["linked_vs_oz"]["onnx"] == report["text_vs_oz"]["onnx"]
    assert row["onnx"]["fallbacks"] == 0 and row["aot"]["fallbacks"] == 0
    assert report["aot_equals_onnx"]


@needs_clang
@pytest.mark.slow
def test_a_policy_trained_through_the_plugin_reads_the_callee_size(tmp_path):
    """With --plugin-features the compiler asks through the plugin and the
    policy sees callee_basic_block_count, which the exported model then
    declares as an input; the plugin feeds it in deployment. The shipped
    model, which does not read it, can start such a run."""
    onnx = pytest.importorskip("onnx")
    from mlbridge.gym.modules import Module
    from mlbridge.native import NativeError, plugin_path
    from mlbridge.problems.inlining.deploy import evaluate_inlining

    try:
        plugin = plugin_path()
    except NativeError as err:
        pytest.skip(f"no plugin: {err}")
    inputs = {}
    for shown in (False, True):
        config = _config(tmp_path / f"run-{shown}", 64)
        config.plugin_features = shown
        train(config)
        graph = onnx.load(str(config.out / "policy.onnx")).graph
        inputs[shown] = {i.name for i in graph.input}
    assert inputs[True] - inputs[False] == {"callee_basic_block_count"}
    # The shipped model, which does not read it, starts such a run.
    from mlbridge.models import model_path

    config = _config(tmp_path / "tuned", 64)
    config.plugin_features, config.init = True, model_path("inlining-size")
    summary = train(config)
    assert summary["warm_start"]["init"] == str(config.init)
    graph = onnx.load(str(config.out / "policy.onnx")).graph
    assert "callee_basic_block_count" in {i.name for i in graph.input}
    bitcode = Path(_bundled_modules()[0])
    report = evaluate_inlining(
        tmp_path / "run-True" / "policy.onnx",
        [Module("one", bitcode, "one", "held-out")],
        plugin,
        tmp_path / "d",
    )
    (row,) = report["modules"]
    assert row["onnx"]["fallbacks"] == 0 and row["aot"]["fallbacks"] == 0
    assert report["aot_equals_onnx"]


@needs_clang
@pytest.mark.parametrize("defer", [False, True])
def test_training_can_defer_where_the_deployed_model_does(tmp_path, monkeypatch, defer):
    """With --defer-in-training the inlining environment of a run gives
    LLVM's decision where the deployed model does (its Deferral);
    by default the policy is asked everywhere."""
    from mlbridge.train import ppo

    seen = {}

    class Stop(Exception):
        pass

    def capture(env_id, workers, kwargs, **_):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(ppo, "make_pool", capture)
    config = _config(tmp_path / "run", 64)
    config.defer_in_training = defer
    with pytest.raises(Stop):
        train(config)
    if defer:
        assert seen["defers_when"] == "is_callee_linkonce_odr"
    else:
        assert "defers_when" not in seen

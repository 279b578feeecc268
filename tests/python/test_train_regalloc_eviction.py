"""``mlbridge train regalloc-eviction``: a tiny PPO run over masked
candidates resumes, exports a model that reads LLVM's eviction tensors, and
deploys in llc-19 over LLVM's interactive protocol, scored against the
default advisor; ``mlbridge evaluate`` measures the same way. Runs are tiny:
the machinery is tested, not the policy's quality."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("gymnasium")
ort = pytest.importorskip("onnxruntime")
if shutil.which("llc-19") is None or shutil.which("clang-19") is None:
    pytest.skip("needs llc-19 and clang-19", allow_module_level=True)

from mlbridge.corpus.program import Program  # noqa: E402
from mlbridge.gym.modules import OPTIMIZED_MODULE_FLAGS, prepare_modules  # noqa: E402
from mlbridge.problems.regalloc_eviction import CANDIDATES, FEATURES  # noqa: E402
from mlbridge.problems.regalloc_eviction.deploy import evaluate_regalloc_eviction  # noqa: E402
from mlbridge.train.ppo import TrainConfig, train  # noqa: E402

PRESSURE = Path(__file__).resolve().parents[1] / "data" / "regalloc_pressure.c"


@pytest.fixture(scope="module")
def pressure(tmp_path_factory):
    (module,) = prepare_modules(
        [Program("pressure", (PRESSURE,), (), "held-out")],
        tmp_path_factory.mktemp("modules"),
        module_flags=OPTIMIZED_MODULE_FLAGS,
    )
    return module


def _config(out: Path, timesteps: int, module, resume: bool = False) -> TrainConfig:
    return TrainConfig(
        task="regalloc-eviction",
        out=out,
        timesteps=timesteps,
        workers=1,
        backend="serial",
        n_steps=64,
        batch_size=64,
        epochs=2,
        checkpoint_every=64,
        warm_start_steps=300,
        resume=resume,
        progress=False,
        env_kwargs={"modules": [str(module.bitcode)]},
    )


@pytest.mark.slow
def test_a_run_exports_a_masked_model_and_deploys_in_llc(tmp_path, pressure):
    out = tmp_path / "run"
    first = train(_config(out, 128, pressure))
    assert first["timesteps"] == 128
    # the actor first imitated the density heuristic (no default to imitate;
    # a random legal answer agrees with it about 1 time in 7)
    assert first["warm_start"]["samples"] == 300 and first["warm_start"]["agreement"] > 0.5
    second = train(_config(out, 192, pressure, resume=True))
    assert second["resumed_from"].endswith("ppo_128_steps.zip")
    session = ort.InferenceSession(str(out / "policy.onnx"))
    assert [i.name for i in session.get_inputs()] == [name for name, _, _ in FEATURES]
    assert [o.name for o in session.get_outputs()] == ["index_to_evict"]
    # the model itself never picks an illegal candidate
    rng = np.random.default_rng(0)
    for _ in range(50):
        mask = np.zeros((1, CANDIDATES), np.int64)
        mask[0, rng.choice(CANDIDATES, 3, replace=False)] = 1
        feed = {}
        for spec in session.get_inputs():
            if spec.name == "mask":
                feed["mask"] = mask
            elif spec.type == "tensor(int64)":
                feed[spec.name] = rng.integers(0, 3, spec.shape)
            else:
                feed[spec.name] = rng.random(spec.shape).astype(np.float32)
        (choice,) = session.run(None, feed)
        assert mask[0, int(choice[0])] == 1

    from mlbridge.native import NativeError, interactive_host_path

    try:
        host = interactive_host_path()
    except NativeError as err:
        pytest.skip(f"no mlbridge-interactive-host: {err}")
    report = evaluate_regalloc_eviction(
        out / "policy.onnx", [pressure], tmp_path / "deploy", host, ("aot", "onnx")
    )
    (row,) = report["modules"]
    assert row["decisions"] > 10 and row["default_score"] > 0 and row["policy_score"] > 0
    assert report["runners_agree"]  # AOT and ONNX Runtime allocate the same
    assert set(row["seconds"]) == {"default", "aot", "onnx"}
    assert row["policy_over_default"] == pytest.approx(row["policy_score"] / row["default_score"])
    assert report["geomean_policy_over_default"] == pytest.approx(row["policy_over_default"])
    assert report["summed_policy_over_default"] == pytest.approx(row["policy_over_default"])
    project = report["projects"]["pressure"]
    assert project["geomean_policy_over_default"] == pytest.approx(row["policy_over_default"])
    assert project["modules_asking"] == 1
    assert "regalloc score policy/default" in report["summary"][0]


@pytest.mark.slow
def test_mlbridge_evaluate_measures_a_policy(tmp_path, pressure):
    out = tmp_path / "run"
    train(_config(out, 64, pressure))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(PRESSURE, corpus / "pressure.c")
    from mlbridge.corpus.defaults import load_corpus

    # a directory's split is fixed by the names (the bundled programs come along)
    (program,) = [p for p in load_corpus(corpus, True) if p.name == "pressure.c"]
    done = subprocess.run(
        [sys.executable, "-m", "mlbridge", "evaluate", "regalloc-eviction"]
        + ["--policy", str(out / "policy.onnx"), "--corpus", str(corpus)]
        + ["--split", program.split, "--out", str(tmp_path / "eval")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "eval" / "evaluate.json").read_text())
    assert [r["module"] for r in report["modules"]] == ["pressure.c"]
    assert "policy/default" in done.stdout


def test_the_density_heuristic_evicts_the_cheapest_legal_range():
    from mlbridge.problems.regalloc_eviction import DensityHeuristic, observation_names

    names = observation_names()
    heuristic = DensityHeuristic(names)
    obs = np.zeros(len(names), np.float32)
    mask = [names.index(f"mask[{i}]") for i in range(CANDIDATES)]
    density = [names.index(f"use_def_density[{i}]") for i in range(CANDIDATES)]
    for i, d in ((3, 0.5), (7, 0.2), (9, 0.1), (32, 0.4)):
        obs[density[i]] = d
    for i in (3, 7, 32):
        obs[mask[i]] = 1
    assert heuristic(obs) == 7  # 9 is cheaper but not legal
    obs[density[32]] = 0.1
    assert heuristic(obs) == 32  # nothing cheaper than the current range
    obs[mask[32]] = 0
    assert heuristic(obs) == 7  # must evict: the cheapest legal


def test_the_default_policy_and_the_imitated_heuristic_are_one_rule():
    """``--policy default`` (LLVM's named tensors) decides as the heuristic the
    problem imitates (its flat observation): one rule, two views."""
    from mlbridge.policies import EvictDefault
    from mlbridge.problems.regalloc_eviction import (
        FEATURES,
        DensityHeuristic,
        observation_names,
    )

    names = observation_names()
    heuristic, default = DensityHeuristic(names), EvictDefault()
    rng = np.random.default_rng(0)
    for _ in range(300):
        obs = rng.random(len(names)).astype(np.float32)
        legal = rng.random(CANDIDATES) < 0.3
        legal[rng.integers(CANDIDATES)] = True
        for i in range(CANDIDATES):
            obs[names.index(f"mask[{i}]")] = legal[i]
        features, at = {}, 0
        for name, _, count in FEATURES:
            features[name] = obs[at : at + count].reshape(1, -1)
            at += count
        assert default(features) == heuristic(obs)

"""The problems over kernel suites (GCC unrolling, MLIR tiling): their suites
and splits, the answer tables of exported models (ONNX Runtime and
mlbridge-aot), deployment through the plugins with any runner (a decision
that falls back is an error), and the CLI's refusal of a corpus for them.
The environments' life cycle is tested with every problem's in
test_problem_environments.py."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from mlbridge.problems import PROBLEMS
from mlbridge.problems.capabilities import AnswerTable
from mlbridge.problems.gcc_unroll import kernels as gcc_kernels
from mlbridge.problems.mlir_tiling import kernels as mlir_kernels
from mlbridge.train.export import answer_rows

SPLITS = ("train", "validation", "held-out")


@pytest.mark.parametrize("suite", [gcc_kernels, mlir_kernels])
def test_every_split_has_kernels_and_no_project_is_in_two(suite):
    names = [k.name for k in suite.suite()]
    assert len(set(names)) == len(names)
    by_split = {s: [n for n in names if suite.split_of(n) == s] for s in SPLITS}
    assert all(by_split.values()), by_split
    project = getattr(suite, "kind_of", lambda n: n)
    projects = {s: {project(n) for n in by_split[s]} for s in SPLITS}
    assert not projects["train"] & projects["held-out"]
    assert not projects["train"] & projects["validation"]
    assert not projects["validation"] & projects["held-out"]
    assert set(suite.SPLITS) <= {project(n) for n in names}  # no stale entry


def test_answer_tables_copy_inputs_and_keep_constants():
    from mlbridge.tensor_spec import TensorSpec

    specs = [TensorSpec("a", "int64_t", (3,)), TensorSpec("b", "int64_t", (1,))]
    assert answer_rows(("a", (1, 2, 3)), specs) == (3, [0, [1, 2, 3]])
    assert answer_rows((0, 8), specs) == (1, [[0], [8]])
    with pytest.raises(ValueError, match="no input"):
        answer_rows(("c",), specs)
    with pytest.raises(ValueError, match="different sizes"):
        answer_rows(("a", 4), specs)


def _random_features(problem, rng):
    from mlbridge.problems import resolve

    inputs, _ = resolve(problem.deploy_inputs)((), [])
    return {s.name: rng.integers(-1, 5000, s.element_count).astype(np.int64) for s in inputs}


@pytest.mark.parametrize("name", ["gcc-unroll", "mlir-tiling"])
def test_the_exported_model_answers_what_the_environment_would(name, tmp_path):
    pytest.importorskip("stable_baselines3")
    gymnasium = pytest.importorskip("gymnasium")
    ort = pytest.importorskip("onnxruntime")
    from stable_baselines3 import PPO

    from mlbridge.gym.timed_kernels import answer_value
    from mlbridge.problems import resolve
    from mlbridge.train.features import signed_log
    from mlbridge.train.tasks import export

    problem = PROBLEMS[name]
    rng = np.random.default_rng(0)
    features = _random_features(problem, rng)
    names = [n if len(v) == 1 else f"{n}[{i}]" for n, v in features.items() for i in range(len(v))]
    env = gymnasium.make("CartPole-v1")  # only its spaces matter below
    env.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (len(names),), np.float32)
    answers = problem.get(AnswerTable).answers
    env.action_space = gymnasium.spaces.Discrete(len(answers))
    model = PPO("MlpPolicy", env, n_steps=64, seed=0, device="cpu")
    path = tmp_path / "policy.onnx"
    export(problem, model.policy, path, names)
    session = ort.InferenceSession(str(path))
    inputs, _ = resolve(problem.deploy_inputs)(names, list(range(len(names))))
    chosen = set()
    for _ in range(100):
        features = _random_features(problem, rng)
        (got,) = session.run(None, {s.name: features[s.name] for s in inputs})
        raw = np.concatenate(list(features.values())).astype(np.float32)
        action, _ = model.predict(signed_log(raw), deterministic=True)
        chosen.add(int(action))
        want = answer_value(answers[int(action)], features)
        np.testing.assert_array_equal(got, want)
    from mlbridge.aot import compile_model

    # raises AotError on any operator mlbridge-aot cannot compile (Concat, Gather)
    assert "class KernelPolicy" in compile_model(str(path), class_name="KernelPolicy").header


def _gcc_env(**kwargs):
    gym = pytest.importorskip("gymnasium")
    import mlbridge.gym  # noqa: F401
    from mlbridge.native import NativeError

    try:
        return gym.make("mlbridge/GccUnroll-v0", rounds=1, calls=50, **kwargs).unwrapped
    except (NativeError, FileNotFoundError) as err:
        pytest.skip(str(err))


def _all_gcc_kernels(directory):
    from mlbridge.problems.gcc_unroll.environment import suite_modules

    return [m for split in SPLITS for m in suite_modules(split, directory)]


@pytest.mark.slow(seconds=16)
def test_every_gcc_kernel_keeps_its_checksum_under_every_factor(tmp_path):
    from mlbridge.gym.timed_kernels import EnvError

    env = _gcc_env(modules=_all_gcc_kernels(tmp_path))
    try:
        assert len(env.modules) == len(gcc_kernels.suite())
        for module in env.modules:
            for runner in ("constant:1", "constant:8"):
                report = env.deploy(module.name, runner)  # EnvError if a checksum differs
                factor = int(runner.split(":")[1])
                assert report["answers"] == [factor] * report["decisions"], report
                assert report["decisions"] >= 1 and report["speedup"] > 0
        # A factor the plugin refuses (over max-unroll) falls back: an error.
        with pytest.raises(EnvError, match="fell back"):
            env.deploy(env.modules[0].name, "constant:9999")
    finally:
        env.close()


def test_a_kernel_environment_refuses_a_corpus(tmp_path):
    from mlbridge.gym.timed_kernels import EnvError

    with pytest.raises(EnvError, match="own kernel suite"):
        _gcc_env(corpus=str(tmp_path))


def _mlbridge(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "mlbridge", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=900,
    )


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_the_cli_refuses_a_corpus_for_a_kernel_problem(command, tmp_path):
    policy = tmp_path / "policy.onnx"
    policy.write_bytes(b"")
    extra = ["--policy", str(policy)] if command == "evaluate" else []
    done = _mlbridge(command, "gcc-unroll", "--corpus", str(tmp_path), *extra, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "own kernel suite" in done.stderr


@pytest.mark.slow
def test_mlbridge_evaluate_deploys_a_policy_through_onnx_and_aot(tmp_path):
    """The GCC policy answering factor 8 everywhere, deployed on one
    validation kernel by ``mlbridge evaluate``."""
    from mlbridge.gcc import UnrollPolicy

    _gcc_env().close()  # skips without gcc-12 or the plugin
    policy = tmp_path / "policy.onnx"
    UnrollPolicy.constant(8).to_onnx(policy)
    done = _mlbridge(
        "evaluate",
        "gcc-unroll",
        "--policy",
        str(policy),
        "--split",
        "validation",
        "--max-programs",
        "1",
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "evaluate.json").read_text())
    assert not report["failures"] and len(report["kernels"]) == 1
    for kind in ("aot", "onnx"):
        row = report["kernels"][0][kind]
        assert row["answers"] == [8] * row["decisions"]
        assert report[kind]["geomean_speedup"] > 0
    assert "geometric mean" in done.stdout

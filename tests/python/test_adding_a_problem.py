"""A new problem is one folder (docs/adding-a-problem.md): a toy problem
written in a temporary folder, installed as a distribution's entry point
(group ``mlbridge.problems``), is registered with gymnasium, trained by
``mlbridge train``, exported, deployed and measured by its own ``evaluate``,
without one line of the package changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

#: The toy problem's folder: a declaration, an environment and a deployment.
TOY = {
    "__init__.py": '''
        """A toy problem: answer 1 when the third of four counts is large."""

        from mlbridge.problems import Problem
        from mlbridge.problems.capabilities import KernelSuite

        PROBLEM = Problem(
            name="toy-counts",
            env_id="mlbridge-toy/Counts-v0",
            environment="toy_problem.environment:CountsEnv",
            output="decision",
            description="1 when the third count is large, reward: 1 per right answer",
            evaluate="toy_problem.deploy:evaluate",
            capabilities=(KernelSuite("toy_problem.environment:suite"),),
        )
    ''',
    "environment.py": '''
        """Four counts per step, 8 steps an episode; reward 1 for the right answer."""

        import gymnasium
        import numpy as np

        from mlbridge.gym.modules import Module


        def suite(split, directory):
            """Each module is a file of counts; the toy's own suite."""
            directory.mkdir(parents=True, exist_ok=True)
            rng = np.random.default_rng(len(split))
            modules = []
            for i in range(6):
                path = directory / f"{split}-{i}.counts"
                path.write_text(" ".join(str(v) for v in rng.integers(-50, 5000, 4)))
                modules.append(Module(f"{split}-{i}", path, f"toy{i % 2}", split))
            return modules


        class CountsEnv(gymnasium.Env):
            observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (4,), np.float32)
            action_space = gymnasium.spaces.Discrete(2)
            feature_names = ("a", "b", "c", "d")

            def __init__(self, split="train", quick=True, max_programs=None, modules=None):
                self._t = 0

            def reset(self, seed=None, options=None):
                super().reset(seed=seed)
                self._t, self._obs = 0, self._draw()
                return self._obs, {}

            def _draw(self):
                return self.np_random.integers(-50, 5000, 4).astype(np.float32)

            def step(self, action):
                reward = float(int(action) == int(self._obs[2] > 2500))
                self._t, self._obs = self._t + 1, self._draw()
                return self._obs, reward, self._t >= 8, False, {}

            def baseline_action(self):
                return 0
    ''',
    "deploy.py": '''
        """The exported model run by ONNX Runtime on the suite's counts."""

        import numpy as np
        import onnxruntime


        def evaluate(policy, modules, work, tool):
            session = onnxruntime.InferenceSession(str(policy))
            right = 0
            for module in modules:
                counts = [int(v) for v in module.bitcode.read_text().split()]
                feed = {n: np.array([v], np.int64) for n, v in zip("abcd", counts)}
                (answer,) = session.run(None, feed)
                right += int(int(answer.reshape(-1)[0]) == int(counts[2] > 2500))
            return {"right": right, "summary": [f"{right} of {len(modules)} right"]}
    ''',
}


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    """A folder holding the toy problem and its distribution's metadata."""
    root = tmp_path_factory.mktemp("toy")
    folder = root / "toy_problem"
    folder.mkdir()
    for name, text in TOY.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    dist = root / "toy_problem-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-problem\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[mlbridge.problems]\ntoy = toy_problem:PROBLEM\n")
    return root


def _run(toy: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(toy), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def test_the_toy_is_registered_with_gymnasium(toy, tmp_path):
    code = (
        "import gymnasium, mlbridge.gym\n"
        "from mlbridge.problems import get_problem\n"
        "env = gymnasium.make('mlbridge-toy/Counts-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(get_problem('toy-counts').env_id, obs.shape)\n"
    )
    done = _run(toy, "-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mlbridge-toy/Counts-v0", "(4,)"]


@pytest.mark.slow(seconds=20)
def test_mlbridge_trains_deploys_and_measures_the_toy(toy, tmp_path):
    out = tmp_path / "run"
    train = (
        "-m mlbridge train toy-counts --backend serial --workers 1 --timesteps 512 "
        "--n-steps 64 --checkpoint-every 256 --warm-start-steps 0 --no-progress"
    ).split()
    done = _run(toy, *train, "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "policy.onnx").is_file()
    assert "of 6 right" in done.stdout
    report = json.loads((out / "deploy.json").read_text())
    assert 0 <= report["right"] <= 6
    # mlbridge evaluate takes it too, on another split of its suite.
    evaluate = ["-m", "mlbridge", "evaluate", "toy-counts", "--policy", str(out / "policy.onnx")]
    done = _run(toy, *evaluate, "--split", "validation", "--out", str(tmp_path / "e"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "of 6 right" in done.stdout

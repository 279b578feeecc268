"""The registry of problems (mlbridge.problems): every problem is declared
once, and the gymnasium ids and ``mlbridge train`` read it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlbridge import problems
from mlbridge.problems import PROBLEMS, Problem, get_problem, resolve


def test_names_and_environment_ids_are_unique_and_each_entry_point_resolves():
    assert len({p.env_id for p in PROBLEMS.values()}) == len(PROBLEMS)
    for name, problem in PROBLEMS.items():
        assert problem.name == name and get_problem(name) is problem
        assert isinstance(resolve(problem.environment), type)
        assert callable(resolve(problem.deploy_inputs))
        assert problem.evaluate is None or callable(resolve(problem.evaluate))


def test_the_gym_and_train_read_the_registry():
    gymnasium = pytest.importorskip("gymnasium")
    import mlbridge.gym
    from mlbridge.train import tasks

    assert mlbridge.gym.ENVIRONMENTS == problems.environments()
    for problem in PROBLEMS.values():
        assert gymnasium.spec(problem.env_id).entry_point == problem.environment
    assert tasks.TASKS is PROBLEMS


def test_the_registry_imports_neither_gymnasium_nor_the_training_stack():
    code = (
        "import sys, mlbridge.problems; "
        "print(sorted(m for m in ('gymnasium', 'torch', 'mlbridge.gym', 'mlbridge.train') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_bad_declarations_are_refused():
    with pytest.raises(ValueError, match="session"):
        Problem("p", "x/P-v0", "m:C", (), "out", "m:f", session="daemon")
    with pytest.raises(ValueError, match="unknown problem"):
        get_problem("regalloc")
    with pytest.raises(ValueError, match="module:attribute"):
        resolve("no-colon")

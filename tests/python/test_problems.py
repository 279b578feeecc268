"""The registry of problems (mlbridge.problems): every problem is declared
once, and the gymnasium ids and ``mlbridge train`` read it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlbridge import problems
from mlbridge.problems import PROBLEMS, Problem, get_problem, resolve
from mlbridge.problems.capabilities import (
    ActionMask,
    AnswerTable,
    Capability,
    Deferral,
    PluginFeatures,
    Trainer,
)


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
    """Nor any module of a problem's folder but its declaration (the
    environment, deployment and trainers are entry points)."""
    code = (
        "import sys, mlbridge.problems\n"
        "heavy = ('gymnasium', 'torch', 'mlbridge.gym', 'mlbridge.train', 'mlbridge.llvm',\n"
        "         'mlbridge.corpus', 'mlbridge.session')\n"
        "print(sorted(m for m in sys.modules if m in heavy or m.count('.') > 2\n"
        "             and m.startswith('mlbridge.problems.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr + done.stdout


def test_bad_declarations_are_refused():
    def problem(*capabilities, hidden=()):
        return Problem("p", "x/P-v0", "m:C", "out", "a toy", hidden, capabilities=capabilities)

    with pytest.raises(ValueError, match="two ActionMask"):
        problem(ActionMask("a"), ActionMask("b"))
    with pytest.raises(ValueError, match="distinct names"):
        problem(Trainer("ppo", "m:f", "PPO again"))
    with pytest.raises(ValueError, match="among the hidden"):
        problem(PluginFeatures(("x",)))
    with pytest.raises(ValueError, match="compiler's decision"):
        problem(Deferral("odr"))
    with pytest.raises(ValueError, match="not an answer"):
        AnswerTable((1, 2), keeps_default=2)
    with pytest.raises(ValueError, match="not a capability"):
        problem(Capability())
    assert problem(Trainer("search", "m:f", "a search")).methods() == ("ppo", "search")
    with pytest.raises(ValueError, match="unknown problem"):
        get_problem("regalloc")
    with pytest.raises(ValueError, match="module:attribute"):
        resolve("no-colon")

"""Every problem of the registry (mlbridge.problems), by one test each
parametrised over it: the environment passes gymnasium's reset and step
checks, runs a random episode and a baseline episode (the compiler's own
decision at every step) to their end, and ends an episode with
``info["error"]`` on an invalid action and on a killed or stalled compiler
session; a corrupt module gives no episode and says why. The bundled demo
programs are the modules of every problem of a corpus (optimised as the
problem declares); a problem with its own kernel suite runs on it."""

from __future__ import annotations

import math
import os
import signal
import warnings

import numpy as np
import pytest
from process_checks import dead, gone, wait_for

gym = pytest.importorskip("gymnasium")

import mlbridge.gym  # noqa: E402, F401  (registers the ids)
from mlbridge.corpus.defaults import bundled_programs  # noqa: E402
from mlbridge.errors import MlbridgeError  # noqa: E402
from mlbridge.gym.corpus_modules import EnvError  # noqa: E402
from mlbridge.gym.modules import module_flags, prepare_modules  # noqa: E402
from mlbridge.native import NativeError  # noqa: E402
from mlbridge.problems import PROBLEMS  # noqa: E402
from mlbridge.problems.capabilities import (  # noqa: E402
    ActionMask,
    AnswerTable,
    KernelSuite,
    OptimizedModules,
)


@pytest.fixture(scope="module", params=sorted(PROBLEMS))
def problem(request):
    return PROBLEMS[request.param]


@pytest.fixture(scope="module")
def modules(problem, tmp_path_factory):
    if problem.get(KernelSuite) is not None:
        return None  # the environment's own suite
    return prepare_modules(
        bundled_programs(),
        tmp_path_factory.mktemp(problem.name),
        module_flags=module_flags(problem.get(OptimizedModules) is not None),
    )


def _make(problem, modules, **kwargs):
    if problem.get(KernelSuite) is not None:
        kwargs.setdefault("rounds", 1)  # timing is not what is tested
    try:
        return gym.make(problem.env_id, modules=modules, **kwargs)
    except (NativeError, FileNotFoundError) as err:  # a native half not built
        pytest.skip(f"{problem.name}: {err}")


def _action(env, rng):
    """A random action, a legal one where the environment masks them."""
    inner = env.unwrapped
    masks = getattr(inner, "action_masks", None)
    if masks is not None:
        return int(rng.choice(np.flatnonzero(masks())))
    return int(rng.integers(inner.action_space.n))


@pytest.mark.slow
def test_gymnasiums_checks_pass(problem, modules):
    from gymnasium.utils import env_checker, passive_env_checker

    env = _make(problem, modules)
    try:
        inner = env.unwrapped
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            passive_env_checker.check_observation_space(inner.observation_space)
            passive_env_checker.check_action_space(inner.action_space)
            env_checker.check_reset_seed_determinism(inner)
            env_checker.check_reset_return_type(inner)
            passive_env_checker.env_reset_passive_checker(inner, seed=0)
            rng = np.random.default_rng(0)
            for _ in range(3):
                result = passive_env_checker.env_step_passive_checker(inner, _action(env, rng))
                if result[2] or result[3]:  # an episode of one kernel may be one loop
                    inner.reset(seed=0)
        assert [str(w.message) for w in caught] == []
        assert len(inner.feature_names) == inner.observation_space.shape[0]
    finally:
        env.close()


@pytest.mark.slow
def test_gymnasiums_check_env_passes(problem, modules):
    """gymnasium's whole check_env; it samples actions without a mask, so a
    masked problem is checked with legal actions above instead."""
    from gymnasium.utils.env_checker import check_env

    if problem.get(ActionMask) is not None:
        pytest.skip("check_env samples illegal actions: checked with legal ones above")
    env = _make(problem, modules)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped, skip_render_check=True)
        assert [str(w.message) for w in caught] == []
    finally:
        env.close()


def test_a_random_episode_runs_to_its_end(problem, modules):
    env = _make(problem, modules)
    try:
        rng = np.random.default_rng(1)
        obs, info = env.reset(seed=1)
        assert env.unwrapped.compiler_pid is not None
        terminated = truncated = False
        steps = 0
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(_action(env, rng))
            steps += 1
            assert steps < 100_000
        assert "error" not in info, info.get("error")
        assert math.isfinite(reward) and env.observation_space.contains(obs)
    finally:
        env.close()


def test_a_baseline_episode_runs_to_its_end(problem, modules):
    env = _make(problem, modules)
    try:
        inner = env.unwrapped
        env.reset(seed=5)
        terminated = truncated = False
        steps = 0
        while not (terminated or truncated):
            action = inner.baseline_action()
            assert inner.action_space.contains(action)
            obs, reward, terminated, truncated, info = env.step(action)
            steps += 1
            assert steps < 100_000
        assert "error" not in info, info.get("error")
        assert math.isfinite(reward)
        table = problem.get(AnswerTable)
        if table is not None:
            assert inner.baseline_action() == table.keeps_default
    finally:
        env.close()


def test_an_invalid_action_ends_the_episode(problem, modules):
    env = _make(problem, modules)
    try:
        obs, _ = env.reset(seed=2)
        _, reward, terminated, truncated, info = env.step(-1)
        assert truncated and not terminated and reward == 0.0
        assert "invalid action" in info["error"]
        with pytest.raises(MlbridgeError):
            env.step(0)
        env.reset(seed=2)  # the environment goes on
    finally:
        env.close()


def test_a_killed_compiler_session_ends_the_episode(problem, modules):
    env = _make(problem, modules)
    try:
        env.reset(seed=3)
        pid = env.unwrapped.compiler_pid
        os.kill(pid, signal.SIGKILL)
        # SIGKILL lands asynchronously: the step is answered to a dead compiler.
        assert wait_for(lambda: dead(pid))
        _, _, terminated, truncated, info = env.step(_action(env, np.random.default_rng(3)))
        assert truncated and not terminated
        assert "SIGKILL" in info["error"] or "killed" in info["error"], info["error"]
        assert wait_for(lambda: gone(pid)) and env.unwrapped.compiler_pid is None
    finally:
        env.close()


@pytest.mark.slow
def test_a_stalled_compiler_session_ends_the_episode(problem, modules):
    env = _make(problem, modules, step_timeout=2.0)
    try:
        env.reset(seed=4)
        pid = env.unwrapped.compiler_pid
        os.kill(pid, signal.SIGSTOP)
        try:
            _, _, terminated, truncated, info = env.step(_action(env, np.random.default_rng(4)))
        finally:
            if not gone(pid):
                os.kill(pid, signal.SIGCONT)
        assert truncated and not terminated
        assert "step_timeout" in info["error"], info["error"]
        assert wait_for(lambda: gone(pid))
    finally:
        env.close()


def test_a_corrupt_module_gives_no_episode(problem, tmp_path):
    corrupt = tmp_path / "corrupt.bc"
    corrupt.write_bytes(b"BC\xc0\xde" + bytes(range(256)) * 4)
    env = _make(problem, [corrupt])
    try:
        with pytest.raises(EnvError, match="no module gives an episode"):
            env.reset(seed=0)
        assert "corrupt" in env.unwrapped.skipped
    finally:
        env.close()


def test_the_shared_keywords_are_checked_alike(problem, modules):
    """Every environment takes the keywords of EnvOptions besides its own
    (one check, in CompilerEnv): a keyword of neither is refused by name,
    a keyword the environment does not take says why, and the shared
    deadlines and render mode are checked before anything starts."""
    from mlbridge.gym.compiler_env import EnvOptions

    with pytest.raises(TypeError, match="unexpected keyword argument 'max_program'"):
        _make(problem, modules, max_program=2)
    with pytest.raises(ValueError, match="step_timeout must be a positive"):
        _make(problem, modules, step_timeout=0)
    with pytest.raises(ValueError, match="renders nothing"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's own: "human" is not in render_modes
        _make(problem, modules, render_mode="human")
    env_class = gym.spec(problem.env_id).entry_point
    if isinstance(env_class, str):
        module, _, name = env_class.partition(":")
        env_class = getattr(__import__(module, fromlist=[name]), name)
    refused = dict(env_class.refused_options)
    if env_class.default_episode_timeout is None:
        refused["episode_timeout"] = "an episode has no deadline"
    else:
        with pytest.raises(ValueError, match="episode_timeout must be a positive"):
            _make(problem, modules, episode_timeout=float("nan"))
    assert set(refused) <= set(EnvOptions.__annotations__)
    for key in refused:
        with pytest.raises(TypeError, match=f"takes no {key}: "):
            _make(problem, modules, **{key: 1})

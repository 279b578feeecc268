"""mlbridge/RegallocEviction-v0 (mlbridge.problems.regalloc_eviction.environment,
docs/regalloc.md) on stock llc-19: an episode answers every eviction
question, its reward is MLGO's regalloc score against the default advisor's
on the same module; the candidate mask is enforced; every fault ends the
episode with info["error"] and leaves no compiler behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from process_checks import gone, wait_for

gym = pytest.importorskip("gymnasium")
if shutil.which("llc-19") is None or shutil.which("clang-19") is None:
    pytest.skip("needs llc-19 and clang-19", allow_module_level=True)

import mlbridge.gym  # noqa: E402, F401  (registers the ids)
from mlbridge.corpus.program import Program  # noqa: E402
from mlbridge.gym.modules import (  # noqa: E402
    MODULE_FLAGS,
    OPTIMIZED_MODULE_FLAGS,
    prepare_modules,
)
from mlbridge.problems import get_problem, resolve  # noqa: E402
from mlbridge.problems.regalloc_eviction import CANDIDATES, FEATURES  # noqa: E402
from mlbridge.problems.regalloc_eviction.environment import EnvError, RegallocEvictionEnv  # noqa: E402

ENV_ID = "mlbridge/RegallocEviction-v0"
PRESSURE = Path(__file__).resolve().parents[1] / "data" / "regalloc_pressure.c"


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """The register-pressure kernel, a module with nothing to evict and a corrupt one."""
    out = tmp_path_factory.mktemp("regalloc")
    silent = out / "silent.c"
    silent.write_text("int silent(int x) { return x * 2; }\n")
    programs = [
        Program("pressure", (PRESSURE,), (), "train"),
        Program("silent", (silent,), (), "train"),
    ]
    pressure, quiet = prepare_modules(programs, out, module_flags=OPTIMIZED_MODULE_FLAGS)
    corrupt = out / "corrupt.bc"
    corrupt.write_bytes(b"BC\xc0\xde" + bytes(range(256)) * 4)
    return pressure, quiet, corrupt


def _legal(env, rng):
    return int(rng.choice(np.flatnonzero(env.action_masks())))


def _episode(env, seed):
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(_legal(env, rng))
    return reward, terminated, truncated, info


def test_registered_with_llvms_features(modules):
    env = gym.make(ENV_ID, modules=[modules[0]])
    try:
        inner = env.unwrapped
        size = sum(count for _, _, count in FEATURES)
        assert env.observation_space.shape == (size,) == (20 * CANDIDATES + 1,)
        assert env.action_space == gym.spaces.Discrete(CANDIDATES)
        assert inner.feature_names[:2] == ("mask[0]", "mask[1]")
        assert inner.feature_names[-1] == "progress"
        obs, info = env.reset(seed=0)
        assert obs.shape == (size,) and obs.dtype == np.float32
        mask = inner.action_masks()
        assert mask.dtype == bool and mask.shape == (CANDIDATES,) and mask.any()
        assert np.array_equal(mask, obs[:CANDIDATES] != 0)
        assert np.array_equal(info["action_mask"], mask)
        problem = get_problem("regalloc-eviction")
        inputs, kept = resolve(problem.deploy_inputs)(inner.feature_names, list(range(size)))
        assert [s.name for s in inputs] == [name for name, _, _ in FEATURES]
        assert sum(s.element_count for s in inputs) == size and kept == list(range(size))
    finally:
        env.close()


@pytest.mark.slow
def test_the_reward_is_the_score_against_the_default_advisor(modules):
    env = RegallocEvictionEnv([modules[0]])
    try:
        rewards = []
        for seed in (0, 1, 2):
            reward, terminated, truncated, info = _episode(env, seed)
            assert terminated and not truncated and "error" not in info
            default = env.default_score(modules[0].name)
            assert info["default_score"] == default > 0
            assert reward == pytest.approx((default - info["score"]) / default)
            assert info["counts"]["score"] == info["score"]
            assert info["decisions"] > 10 and info["compile_seconds"] > 0
            rewards.append(reward)
        # the same answers give the same allocation
        assert _episode(env, 1)[0] == rewards[1]
        assert len(set(rewards)) > 1  # the answers matter
        assert not env.action_masks().any()  # no episode runs
    finally:
        env.close()


@pytest.mark.slow
def test_gymnasiums_checks_pass_with_legal_actions(modules):
    # check_env itself steps with action_space.sample(), which ignores the
    # mask: an illegal candidate ends the episode by design. Its checks of
    # reset and step run here with legal actions.
    from gymnasium.utils import env_checker, passive_env_checker

    env = gym.make(ENV_ID, modules=[modules[0]])
    try:
        inner = env.unwrapped
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            passive_env_checker.check_observation_space(inner.observation_space)
            passive_env_checker.check_action_space(inner.action_space)
            env_checker.check_reset_seed_determinism(inner)
            env_checker.check_reset_options(inner)
            env_checker.check_reset_return_type(inner)
            passive_env_checker.env_reset_passive_checker(inner, seed=0)
            rng = np.random.default_rng(0)
            for _ in range(5):
                passive_env_checker.env_step_passive_checker(inner, _legal(inner, rng))
        assert [str(w.message) for w in caught] == []
    finally:
        env.close()


def test_an_illegal_candidate_ends_the_episode(modules):
    env = RegallocEvictionEnv([modules[0]])
    try:
        env.reset(seed=0)
        pid = env.compiler_pid
        illegal = int(np.flatnonzero(~env.action_masks())[0])
        _, reward, terminated, truncated, info = env.step(illegal)
        assert truncated and not terminated and reward == 0.0
        assert f"candidate {illegal} cannot be evicted" in info["error"]
        assert env.compiler_pid is None and wait_for(lambda: gone(pid))
        with pytest.raises(EnvError, match="reset"):
            env.step(0)
        assert _episode(env, 0)[1]  # the environment goes on
    finally:
        env.close()


@pytest.mark.parametrize("action", [CANDIDATES, -1, 0.5, "1", None])
def test_an_invalid_action_ends_the_episode(modules, action):
    env = RegallocEvictionEnv([modules[0]])
    try:
        env.reset(seed=0)
        _, _, terminated, truncated, info = env.step(action)
        assert truncated and not terminated
        assert "invalid action" in info["error"] and f"Discrete({CANDIDATES})" in info["error"]
    finally:
        env.close()


def test_a_killed_compiler_ends_the_episode(modules):
    env = RegallocEvictionEnv([modules[0]])
    try:
        env.reset(seed=0)
        pid = env.compiler_pid
        os.kill(pid, signal.SIGKILL)
        _, _, terminated, truncated, info = env.step(_legal(env, np.random.default_rng(0)))
        assert truncated and not terminated
        assert "killed by SIGKILL" in info["error"]
        assert gone(pid) and env.compiler_pid is None
    finally:
        env.close()


def test_modules_that_give_no_episode_are_skipped_with_why(modules):
    pressure, quiet, corrupt = modules
    env = RegallocEvictionEnv([quiet, corrupt])
    try:
        with pytest.raises(EnvError, match="no module gives an episode"):
            env.reset(seed=0)
        assert "asked nothing" in env.skipped[quiet.name]
        assert "default advisor failed" in env.skipped["corrupt"]
    finally:
        env.close()
    env = RegallocEvictionEnv([quiet, pressure])
    try:
        env.reset(seed=0)
        assert env.module == pressure.name
    finally:
        env.close()


def test_close_stops_the_compiler_and_removes_the_work_directory(modules):
    env = RegallocEvictionEnv([modules[0]])
    env.reset(seed=0)
    pid, work = env.compiler_pid, env._workdir()
    env.close()
    assert wait_for(lambda: gone(pid)) and not os.path.exists(work)
    env.close()  # again


def test_modules_are_optimised_for_code_generation(tmp_path):
    programs = [Program("pressure", (PRESSURE,), (), "train")]
    (optimised,) = prepare_modules(programs, tmp_path, module_flags=OPTIMIZED_MODULE_FLAGS)
    (unoptimised,) = prepare_modules(programs, tmp_path, module_flags=MODULE_FLAGS)
    assert optimised.bitcode != unoptimised.bitcode
    ir = subprocess.run(
        ["llvm-dis-19", str(optimised.bitcode), "-o", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "minsize" not in ir and "alloca" not in ir


def test_constructor_errors(modules):
    with pytest.raises(ValueError, match="opt_level"):
        RegallocEvictionEnv([modules[0]], opt_level=0)
    with pytest.raises(ValueError, match="step_timeout"):
        RegallocEvictionEnv([modules[0]], step_timeout=float("nan"))
    with pytest.raises(ValueError, match="render"):
        RegallocEvictionEnv([modules[0]], render_mode="human")


def test_per_function_episodes_allocate_one_function_each(modules, tmp_path):
    from mlbridge.llvm.functions import defined_functions

    pressure = modules[0]
    env = RegallocEvictionEnv([pressure], per_function=True, cache_dir=tmp_path)
    try:
        names = defined_functions(pressure.bitcode)
        assert [m.name for m in env.modules] == [f"{pressure.name}:{n}" for n in names]
        assert all(m.program == pressure.program for m in env.modules)
        reward, terminated, _, info = _episode(env, 0)
        assert terminated and info["module"] == f"{pressure.name}:pressure"
        assert reward == pytest.approx(
            (info["default_score"] - info["score"]) / info["default_score"]
        )
        extracted = sorted(tmp_path.glob("functions/*/*.bc"))
        assert len(extracted) == len(names)
        stamps = [p.stat().st_mtime_ns for p in extracted]
    finally:
        env.close()
    again = RegallocEvictionEnv([pressure], per_function=True, cache_dir=tmp_path)
    again.close()
    assert [p.stat().st_mtime_ns for p in sorted(tmp_path.glob("functions/*/*.bc"))] == stamps


def test_an_alias_is_no_function_of_its_own(tmp_path):
    from mlbridge.llvm.functions import function_modules

    source = tmp_path / "alias.cc"
    source.write_text(
        "struct S { ~S(); int x; };\nS::~S() { x = 0; }\nint f(int a) { return a; }\n"
    )
    bitcode = tmp_path / "alias.bc"
    subprocess.run(
        ["clang-19", "-x", "c++", "-O2", "-emit-llvm", "-c", str(source), "-o", str(bitcode)]
        + ["-Xclang", "-mconstructor-aliases"],
        check=True,
    )
    names = [name for name, _ in function_modules(bitcode, tmp_path / "cache")]
    assert names == ["_Z1fi", "_ZN1SD2Ev"]  # D1 is an alias of D2, left out

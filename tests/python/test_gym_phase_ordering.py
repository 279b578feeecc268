"""mlbridge/PhaseOrdering-v0 (mlbridge.problems.phase_ordering.environment, docs/gym.md) on
mlbridge-phase-service, LLVM 19.

The spaces come from the service's --list-actions; default<Oz> as the only
action reaches the -Oz baseline (return (initial - Oz) / Oz); every action runs on a real
module; seeded runs repeat; snapshot/restore gives back the same module;
every fault (invalid action, an action the service refuses, a killed or
stopped service, a corrupt module) ends the episode with info["error"] or a
clear reset error and leaves no process, thread or file descriptor behind;
gymnasium's checker and a worker pool run it. The bundled demo modules keep
it quick.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from process_checks import children, gone, open_fds, wait_for

gym = pytest.importorskip("gymnasium")

import mlbridge.gym  # noqa: E402, F401  (registers the ids)
from mlbridge.corpus.defaults import bundled_programs  # noqa: E402
from mlbridge.gym.modules import prepare_modules  # noqa: E402
from mlbridge.problems.phase_ordering.environment import (  # noqa: E402
    EnvError,
    PhaseOrderingEnv,
    describe_service,
)

ENV_ID = "mlbridge/PhaseOrdering-v0"
SMALL = "demo-hashtable"  # the smallest bundled module (789 instructions)

#: A loop and a call through memory, as clang emits them before -O passes.
SUM_LL = Path(__file__).resolve().parents[1] / "data" / "phase_sum.ll"
#: Code clang -Oz vectorizes (SLP) and turns into a relative lookup table.
OZ_IDENTITY_C = Path(__file__).resolve().parents[1] / "data" / "oz_identity.c"


def _service_or_skip():
    from mlbridge.native import NativeError, phase_service_path

    try:
        return str(phase_service_path())
    except NativeError as err:
        pytest.skip(f"no mlbridge-phase-service: {err}")


@pytest.fixture(scope="module")
def service():
    return _service_or_skip()


@pytest.fixture(scope="module")
def bundled(tmp_path_factory, service):
    """The bundled demo programs as modules (demo-expr, demo-hashtable, demo-kernels)."""
    return prepare_modules(bundled_programs(), tmp_path_factory.mktemp("modules"))


@pytest.fixture(scope="module")
def odd_modules(tmp_path_factory):
    """A corrupt bitcode file and a small textual IR module."""
    out = tmp_path_factory.mktemp("odd")
    corrupt = out / "corrupt.bc"
    corrupt.write_bytes(b"BC\xc0\xde" + bytes(range(256)) * 4)
    text = out / "sum.ll"
    text.write_text(SUM_LL.read_text())
    return corrupt, text


def _actions(env, *names):
    """The indices of the actions named ``names``."""
    index = {name: i for i, (name, _) in enumerate(env.unwrapped.actions)}
    return [index[n] for n in names]


def _run_episode(env, actions, **reset):
    """One episode of ``actions`` (a list, or a callable obs -> action)."""
    obs, info = env.reset(**reset)
    observations, rewards, step = [obs], [], 0
    while True:
        action = actions(obs) if callable(actions) else actions[step]
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        step += 1
        assert not terminated
        if truncated:
            return observations, rewards, info
        observations.append(obs)


# -- registration, spaces ------------------------------------------------------------


def test_importing_registers_the_id_without_loading_the_env():
    code = (
        "import sys, gymnasium, mlbridge.gym\n"
        f"assert {ENV_ID!r} in gymnasium.registry\n"
        "assert 'mlbridge.problems.phase_ordering.environment' not in sys.modules\n"
        "assert 'mlbridge.pipe_host' not in sys.modules\n"
        "from mlbridge.gym import PhaseOrderingEnv\n"
        "assert PhaseOrderingEnv.__module__ == 'mlbridge.problems.phase_ordering.environment'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert (
        gym.spec(ENV_ID).entry_point
        == "mlbridge.problems.phase_ordering.environment:PhaseOrderingEnv"
    )


def test_spaces_and_names_come_from_the_service(bundled, service):
    described = describe_service(service)
    env = PhaseOrderingEnv(bundled)
    try:
        assert env.service == os.path.abspath(service)
        names = env.feature_names
        assert list(names[:56]) == described["features"] and names[0] == "BBNumArgsHi"
        assert names[56:] == (
            "instcount",
            "initial_instcount",
            "baseline_instcount",
            "status",
            "module",
            "steps",
        )
        assert env.observation_space.shape == (62,)
        assert env.observation_space.dtype == np.float32
        assert env.actions == [(a["name"], a["pipeline"]) for a in described["actions"]]
        assert env.action_space == gym.spaces.Discrete(len(env.actions))
        assert env.actions[env.default_action] == ("default<Oz>", "default<Oz>")
        assert env.service_pid is None  # started at the first reset
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        assert set(info) == {
            "module",
            "instcount",
            "initial_instcount",
            "baseline_instcount",
            "steps",
        }
        assert info["instcount"] == info["initial_instcount"] > info["baseline_instcount"] > 0
        assert obs[names.index("TotalInsts")] == obs[names.index("instcount")] == info["instcount"]
        assert obs[names.index("module")] == [m.name for m in bundled].index(info["module"])
        assert obs[names.index("status")] == 0 and obs[names.index("steps")] == 0
        assert env.service_pid is not None and not gone(env.service_pid)
    finally:
        env.close()


def test_check_env_is_clean(bundled):
    from gymnasium.utils.env_checker import check_env

    env = gym.make(ENV_ID, modules=bundled, max_steps=4)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)  # with its spec: also makes and closes one
        assert [str(w.message) for w in caught] == []
    finally:
        env.close()


def test_constructor_errors(bundled, tmp_path):
    with pytest.raises(ValueError, match="split"):
        PhaseOrderingEnv(bundled, split="test")
    with pytest.raises(ValueError, match="rollback"):
        PhaseOrderingEnv(bundled, rollback="never")
    with pytest.raises(ValueError, match="format"):
        PhaseOrderingEnv(bundled, format="xml")
    with pytest.raises(ValueError, match="max_steps"):
        PhaseOrderingEnv(bundled, max_steps=0)
    with pytest.raises(ValueError, match="positive"):
        PhaseOrderingEnv(bundled, step_timeout=0)
    with pytest.raises(ValueError, match="renders nothing"):
        PhaseOrderingEnv(bundled, render_mode="human")
    with pytest.raises(EnvError, match="does not exist"):
        PhaseOrderingEnv(bundled, service=tmp_path / "no-such-service")
    with pytest.raises(EnvError, match="does not exist"):
        PhaseOrderingEnv(bundled, service="no-such-program-on-the-path")
    impostor = tmp_path / "impostor"
    impostor.write_text("#!/bin/sh\necho '{\"actions\": []}'\n")
    impostor.chmod(0o755)
    with pytest.raises(EnvError, match="no usable description: no default_action"):
        PhaseOrderingEnv(bundled, service=impostor)
    with pytest.raises(EnvError, match="no module"):
        PhaseOrderingEnv([])


# -- actions and the reward ------------------------------------------------------------


def test_default_oz_alone_reaches_the_baseline(bundled):
    env = gym.make(ENV_ID, modules=bundled, max_steps=1)
    oz = env.unwrapped.default_action
    try:
        for module in bundled:
            _, rewards, info = _run_episode(env, [oz], options={"module": module.name})
            assert "error" not in info, info
            assert info["instcount"] == info["baseline_instcount"] < info["initial_instcount"]
            assert info["action"] == "default<Oz>" and info["steps"] == 1
            assert info["oz_ratio"] == 1.0
            expected = (info["initial_instcount"] - info["baseline_instcount"]) / info[
                "baseline_instcount"
            ]
            assert sum(rewards) == pytest.approx(expected)
    finally:
        env.close()


def test_default_oz_through_the_service_is_clang_oz_byte_for_byte(bundled, tmp_path):
    """The harness identity: default<Oz> applied by the service, the module
    written (its use-list order kept) and given to clang's -Oz code
    generation alone, is the object plain clang-19 -Oz makes of the same
    module. (demo-kernels differs when the service writes without the
    use-list order, or optimises a clone of the parsed module; oz_identity.c
    when the service runs opt's default<Oz>, without SLP vectorization, or
    its target is not position independent.)"""
    from mlbridge.corpus.program import Program

    unit = Program("oz-identity", (OZ_IDENTITY_C,), (), "train")
    modules = [*bundled, *prepare_modules([unit], tmp_path / "unit")]
    env = gym.make(ENV_ID, modules=modules, max_steps=2)
    po = env.unwrapped
    try:
        for module in modules:
            env.reset(options={"module": module.name})
            env.step(po.default_action)
            written = po.write_bitcode(tmp_path / f"{module.name}.bc")
            objects = []
            for name, inputs in (
                ("service", ["-Xclang", "-disable-llvm-passes", str(written)]),
                ("clang", [str(module.bitcode)]),
            ):
                objects.append(tmp_path / f"{module.name}.{name}.o")
                command = ["clang-19", "-Oz", "-c", "-w", *inputs, "-o", str(objects[-1])]
                subprocess.run(command, check=True)
            assert objects[0].read_bytes() == objects[1].read_bytes(), module.name
            # The episode goes on from the written state.
            _, _, _, _, info = env.step(0)
            assert "error" not in info
    finally:
        env.close()


def test_the_reward_in_allocated_bytes_after_clangs_code_generation(bundled, tmp_path):
    """size_metric="allocated": each step's object (clang's -Oz code
    generation of the module) is measured; default<Oz> alone ends exactly at
    plain clang -Oz's object (the harness identity), so its return is
    (initial - Oz) / Oz in allocated bytes and oz_ratio is 1."""
    from mlbridge.corpus.program import Program
    from mlbridge.llvm.outcomes import object_sizes

    unit = Program("oz-identity", (OZ_IDENTITY_C,), (), "train")
    modules = [*prepare_modules([unit], tmp_path / "unit"), bundled[0]]
    with pytest.raises(ValueError, match="size_metric"):
        PhaseOrderingEnv(modules, size_metric="bytes")
    env = PhaseOrderingEnv(modules, max_steps=2, size_metric="allocated")
    try:
        for module in modules:
            _, info = env.reset(options={"module": module.name})
            plain = tmp_path / "plain.o"
            subprocess.run(
                ["clang-19", "-Oz", "-c", "-w", str(module.bitcode), "-o", str(plain)], check=True
            )
            assert info["oz_size"] == object_sizes(str(plain))["allocated"]
            assert info["size"] == info["initial_size"] > 0
            _, reward, _, _, info = env.step(env.default_action)
            assert info["size"] == info["oz_size"], module.name
            assert reward == pytest.approx(
                (info["initial_size"] - info["oz_size"]) / info["oz_size"]
            )
            _, reward, _, truncated, info = env.step(env.default_action)
            assert truncated and info["oz_ratio"] == pytest.approx(info["oz_size"] / info["size"])
            assert reward == pytest.approx((info["oz_size"] - info["size"]) / info["oz_size"])
    finally:
        env.close()


def test_a_constant_pipeline_through_the_service(service, tmp_path):
    """--pipeline TEXT --module IN -o OUT: default<Oz> there is clang -Oz byte
    for byte too; a sequence of pipelines runs; one that does not parse is a
    usage error."""
    from mlbridge.corpus.program import Program

    unit = Program("oz-identity", (OZ_IDENTITY_C,), (), "train")
    (module,) = prepare_modules([unit], tmp_path / "unit")

    def compile_object(inputs, name):
        out = tmp_path / name
        subprocess.run(["clang-19", "-Oz", "-c", "-w", *inputs, "-o", str(out)], check=True)
        return out.read_bytes()

    plain = compile_object([str(module.bitcode)], "plain.o")
    for pipeline in ("default<Oz>", "default<Oz>,function(instcombine),default<Oz>"):
        out = tmp_path / "out.bc"
        run = subprocess.run(
            [service, "--pipeline", pipeline, "--module", str(module.bitcode), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0 and run.stderr == "", run.stderr
        made = compile_object(["-Xclang", "-disable-llvm-passes", str(out)], "made.o")
        if pipeline == "default<Oz>":
            assert made == plain
    run = subprocess.run(
        [service, "--pipeline", "no-such-pass", "--module", str(module.bitcode), "-o", "x.bc"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 2 and "no-such-pass" in run.stderr
    assert not (tmp_path / "x.bc").exists()


def test_every_action_runs_on_a_real_module(bundled):
    env = PhaseOrderingEnv(bundled, max_steps=1)
    try:
        changed = 0
        for index, (name, _) in enumerate(env.actions):
            _, _, info = _run_episode(env, [index], options={"module": SMALL})
            assert "error" not in info, (name, info)
            assert info["action"] == name and info["steps"] == 1
            changed += info["instcount"] != info["initial_instcount"]
        assert changed > len(env.actions) // 3
        # and all of them in a row, on the module each one leaves
        env.max_steps = len(env.actions)
        observations, rewards, info = _run_episode(
            env, list(range(len(env.actions))), options={"module": SMALL}
        )
        assert "error" not in info and info["steps"] == len(env.actions)
        status = env.feature_names.index("status")
        assert all(obs[status] == 0 for obs in observations)
    finally:
        env.close()


def test_the_return_is_the_reduction_against_oz(bundled, odd_modules):
    _, text = odd_modules
    env = PhaseOrderingEnv([*bundled, text], max_steps=12)
    try:
        rng = np.random.default_rng(3)
        for module in ("demo-expr", "sum"):
            actions = [int(a) for a in rng.integers(len(env.actions), size=12)]
            _, rewards, info = _run_episode(env, actions, options={"module": module})
            assert "error" not in info, info
            expected = (info["initial_instcount"] - info["instcount"]) / max(
                1, info["baseline_instcount"]
            )
            assert sum(rewards) == pytest.approx(expected, rel=1e-9)
            assert info["oz_ratio"] == info["baseline_instcount"] / info["instcount"]
    finally:
        env.close()


def test_formats_and_rollback_give_the_same_observations(bundled):
    names = ("instcombine", "sroa", "simplifycfg", "gvn", "seq-loop-mssa", "default<Oz>")
    runs = []
    for kwargs in ({}, {"format": "json"}, {"format": "protobuf"}, {"rollback": "pristine"}):
        env = PhaseOrderingEnv(bundled, max_steps=len(names), **kwargs)
        actions = _actions(env, *names)
        try:
            observations, rewards, info = _run_episode(env, actions, options={"module": SMALL})
            assert "error" not in info, (kwargs, info)
            runs.append((np.array(observations), rewards))
        finally:
            env.close()
    for observations, rewards in runs[1:]:
        assert np.array_equal(observations, runs[0][0]) and rewards == runs[0][1]


# -- reproducibility ---------------------------------------------------------------------


def test_the_same_seed_gives_the_same_modules_and_observations(bundled):
    def run(seed):
        env = PhaseOrderingEnv(bundled, max_steps=6)
        env.action_space.seed(seed)
        try:
            env.reset(seed=seed)
            out = []
            for _ in range(4):
                observations, rewards, info = _run_episode(
                    env, lambda obs: env.action_space.sample()
                )
                out.append((info["module"], np.array(observations), rewards))
            return out
        finally:
            env.close()

    first, second = run(7), run(7)
    for (m1, o1, r1), (m2, o2, r2) in zip(first, second):
        assert m1 == m2 and r1 == r2
        assert np.array_equal(o1, o2)
    assert len({m for m, _, _ in first}) > 1


# -- snapshots ---------------------------------------------------------------------------


def test_snapshot_and_restore(bundled):
    env = gym.make(ENV_ID, modules=bundled, max_steps=5)
    po = env.unwrapped
    try:
        sroa, instcombine, simplifycfg, gvn = _actions(
            env, "sroa", "instcombine", "simplifycfg", "gvn"
        )
        env.reset(options={"module": "demo-kernels"})
        env.step(sroa)
        obs, *_ = env.step(instcombine)
        po.snapshot(0)
        after = [env.step(a) for a in (simplifycfg, gvn)]
        assert not np.array_equal(after[-1][0], obs)
        restored = po.restore(0)
        assert np.array_equal(restored, obs)
        again = [env.step(a) for a in (simplifycfg, gvn)]  # the same steps, the same module
        for (o1, r1, *_, i1), (o2, r2, *_, i2) in zip(after, again):
            assert np.array_equal(o1, o2) and r1 == r2 and i1 == i2
        # the episode ends at max_steps; a restore goes on from the slot
        _, _, _, truncated, info = env.step(instcombine)
        assert truncated and info["steps"] == 5
        assert np.array_equal(po.restore(0), obs)
        assert env.step(simplifycfg)[3] is False
        with pytest.raises(EnvError, match=r"restore\(1\) failed: status 1"):
            po.restore(1)  # empty
        with pytest.raises(ValueError, match="slots are 0 to 7"):
            po.snapshot(8)
        assert env.step(gvn)[3] is False  # a failed restore changes nothing
        env.reset(options={"module": "demo-kernels"})
        with pytest.raises(EnvError, match="empty"):
            po.restore(0)  # a reset drops the slots
    finally:
        env.close()
    with pytest.raises(EnvError, match="closed"):
        po.snapshot(0)


# -- faults ----------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["past the end", -1, 0.5, "1", None, np.array([1])])
def test_an_invalid_action_ends_the_episode(bundled, action):
    env = PhaseOrderingEnv(bundled)
    count = len(env.actions)
    if isinstance(action, str) and action == "past the end":
        action = count
    try:
        obs, _ = env.reset(seed=1)
        pid = env.service_pid
        obs2, reward, terminated, truncated, info = env.step(action)
        assert truncated and not terminated and reward == 0.0
        assert "invalid action" in info["error"] and f"Discrete({count})" in info["error"]
        assert np.array_equal(obs, obs2) and "oz_ratio" in info
        with pytest.raises(EnvError, match="reset"):
            env.step(0)
        env.reset()  # the environment goes on, with the same service
        assert env.step(0)[3] is False
        assert env.service_pid == pid
    finally:
        env.close()


def test_an_action_the_service_refuses_ends_the_episode(bundled):
    env = PhaseOrderingEnv(bundled)
    try:
        env.reset(seed=2)
        pid = env.service_pid
        # an action the environment lets through but the service does not have
        env.actions = [*env.actions, ("bogus", "bogus")]
        env.action_space = gym.spaces.Discrete(len(env.actions))
        obs, reward, terminated, truncated, info = env.step(len(env.actions) - 1)
        assert truncated and not terminated and reward == 0.0
        assert info["error"].startswith("bogus failed: status 1 (invalid_command): no action #")
        assert obs[env.feature_names.index("status")] == 1
        assert env.service_pid == pid  # the service is fine
        env.reset()
        assert env.step(0)[3] is False
    finally:
        env.close()


def test_a_killed_service_ends_the_episode_and_is_replaced(bundled):
    env = PhaseOrderingEnv(bundled)
    try:
        env.reset(options={"module": "demo-expr"})
        for _ in range(3):
            env.step(0)
        pid = env.service_pid
        os.kill(pid, signal.SIGKILL)
        _, reward, terminated, truncated, info = env.step(0)
        assert truncated and not terminated and reward == 0.0
        assert "instcombine: the compiler service was killed by SIGKILL" in info["error"]
        assert info["steps"] == 3 and info["module"] == "demo-expr"
        assert gone(pid) and env.service_pid is None
        with pytest.raises(EnvError, match="gone"):
            env.unwrapped.snapshot(0)
        env.reset(options={"module": "demo-expr"})  # a fresh service
        assert env.service_pid not in (None, pid)
        # killed between episodes: the next reset replaces it, no module skipped
        os.kill(env.service_pid, signal.SIGKILL)
        env.reset(seed=0)
        assert env.step(0)[3] is False and env.skipped == {}
    finally:
        env.close()
    assert children() == []


@pytest.mark.slow
def test_a_stopped_service_hits_step_timeout_and_is_killed(bundled):
    threads = threading.active_count()
    env = PhaseOrderingEnv(bundled, step_timeout=2.0)
    try:
        env.reset(options={"module": "demo-kernels"})
        env.step(0)
        pid = env.service_pid
        os.kill(pid, signal.SIGSTOP)
        start = time.monotonic()
        _, _, terminated, truncated, info = env.step(0)
        assert time.monotonic() - start < 30
        assert truncated and not terminated
        assert "answered nothing within step_timeout (2 s): killed" in info["error"]
        assert gone(pid) and env.service_pid is None
        env.reset(options={"module": "demo-kernels"})
        assert env.step(0)[3] is False
    finally:
        env.close()
    assert wait_for(lambda: threading.active_count() <= threads)
    assert children() == []


@pytest.mark.slow
def test_a_service_left_waiting_exits_and_is_replaced(bundled, monkeypatch):
    from mlbridge.problems.phase_ordering import environment as phase_ordering

    monkeypatch.setattr(phase_ordering, "IDLE_TIMEOUT", 1.0)
    env = PhaseOrderingEnv(bundled)
    try:
        env.reset(seed=0)
        pid = env.service_pid
        # no command for a second: it exits (service_pid reaps it)
        assert wait_for(lambda: env.service_pid is None) and gone(pid)
        _, _, _, truncated, info = env.step(0)
        assert truncated and "failed (exit status 1)" in info["error"]
        assert "stderr: mlbridge-phase-service: error: runner pipe:" in info["error"]
        assert "timed out waiting for a reply" in info["error"]
        env.reset(seed=0)
        assert env.service_pid not in (None, pid)
    finally:
        env.close()


def test_a_service_that_cannot_start_is_an_env_error(bundled, service, tmp_path):
    broken = tmp_path / "broken-service"
    broken.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --list-actions ]; then exec "{service}" --list-actions; fi\n'
        "echo 'broken on purpose' >&2\n"
        "exit 3\n"
    )
    broken.chmod(0o755)
    env = PhaseOrderingEnv(bundled, service=broken)
    try:
        with pytest.raises(EnvError, match=r"did not start: .*exit status 3.*broken on purpose"):
            env.reset(seed=0)
        assert env.skipped == {}
    finally:
        env.close()
    assert children() == []


def test_a_corrupt_module_is_skipped_and_recorded(bundled, odd_modules):
    corrupt, text = odd_modules
    env = PhaseOrderingEnv([corrupt, text])
    try:
        with pytest.raises(EnvError, match="corrupt gives no episode: the compiler service cannot"):
            env.reset(options={"module": "corrupt"})
        assert "status 3 (load_failed)" in env.skipped["corrupt"]
        assert "corrupt.bc" in env.skipped["corrupt"]
        for seed in range(3):
            _, info = env.reset(seed=seed)
            assert info["module"] == "sum"
        assert set(env.skipped) == {"corrupt"}
        with pytest.raises(EnvError, match="no module named 'nope'"):
            env.reset(options={"module": "nope"})
    finally:
        env.close()
    env = PhaseOrderingEnv([corrupt])
    try:
        with pytest.raises(EnvError, match="no module gives an episode"):
            env.reset(seed=0)
    finally:
        env.close()
    assert children() == []


def test_a_module_that_crashes_llvm_costs_its_episode_not_the_service(tmp_path, odd_modules):
    """LLVM 19's parser overflows its stack on deeply nested types: the
    service loads modules in a worker process, so the service survives."""
    _, text = odd_modules
    crasher = tmp_path / "crasher.ll"
    depth = 300_000
    crasher.write_text("%t = type " + "[1 x " * depth + "i8" + "]" * depth + "\n")
    env = PhaseOrderingEnv([crasher, text])
    try:
        env.reset(options={"module": "sum"})
        pid = env.unwrapped.service_pid
        with pytest.raises(EnvError, match="crasher gives no episode"):
            env.reset(options={"module": "crasher"})
        assert "LLVM crashed" in env.skipped["crasher"], env.skipped
        assert env.unwrapped.service_pid == pid  # the same service
        _, info = env.reset(options={"module": "sum"})
        assert info["module"] == "sum" and env.step(0)[3] in (False, True)
        assert env.unwrapped.service_pid == pid
    finally:
        env.close()
    assert children() == []


# -- resources -------------------------------------------------------------------------


def test_many_episodes_leak_nothing(bundled):
    env = PhaseOrderingEnv(bundled, max_steps=4)
    env.reset(seed=0)  # warm up: the service, the baselines
    for module in bundled:
        env.reset(options={"module": module.name})
    threads, fds = threading.active_count(), open_fds()
    pid = env.service_pid
    for i in range(20):
        if i % 4 == 3:  # some episodes are abandoned half-way
            env.reset()
            env.step(1)
            continue
        _, _, info = _run_episode(env, lambda obs: env.action_space.sample())
        assert "error" not in info, info
    assert env.service_pid == pid  # one service for every episode
    assert threading.active_count() <= threads and open_fds() <= fds
    env.close()
    env.close()  # twice is fine
    assert gone(pid)
    with pytest.raises(EnvError, match="closed"):
        env.reset()
    assert wait_for(lambda: threading.active_count() < threads)
    assert wait_for(lambda: open_fds() < fds)
    assert children() == []


def test_close_ends_the_service(bundled):
    env = gym.make(ENV_ID, modules=bundled)
    env.reset(seed=3)
    pid = env.unwrapped.service_pid
    env.close()
    assert gone(pid)  # it exited on END (close waited for it)


# -- pools, Stable-Baselines3 ------------------------------------------------------------


@pytest.mark.slow
def test_runs_in_a_worker_pool(bundled):
    from mlbridge.gym.pool import make_pool

    kwargs = {"modules": bundled, "max_steps": 8}
    with make_pool(ENV_ID, 2, kwargs, backend="process", seed=5) as pool:
        rollouts = pool.rollout(None, 20)
        assert [r.steps for r in rollouts] == [20, 20]
        assert rollouts[0].observations.shape == (20, 62)
        assert [len(r.episodes) for r in rollouts] == [2, 2]
        assert not np.array_equal(rollouts[0].actions, rollouts[1].actions)
        oz = pool.call("attribute", [("default_action",)] * 2)[0]
        results = pool.evaluate(lambda obs: oz, [m.name for m in bundled])
    assert [r["module"] for r in results] == [m.name for m in bundled]
    for r in results:
        assert "error" not in r and r["length"] == 8
        # -Oz, then 7 more -Oz: about what -Oz achieves
        oz_return = (r["initial_instcount"] - r["baseline_instcount"]) / r["baseline_instcount"]
        assert r["return"] == pytest.approx(oz_return, abs=0.05)
        assert r["oz_ratio"] == pytest.approx(1.0, abs=0.05)


def test_stable_baselines3_ppo_learns_a_few_steps(bundled):
    pytest.importorskip("torch")
    sb3 = pytest.importorskip("stable_baselines3")
    env = gym.make(ENV_ID, modules=bundled, max_steps=8)
    try:
        model = sb3.PPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
        model.learn(32)
        obs, _ = env.reset(seed=0)
        action, _ = model.predict(obs, deterministic=True)
        assert env.action_space.contains(int(action))
    finally:
        env.close()

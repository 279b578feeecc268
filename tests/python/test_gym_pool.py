"""Worker pools (mlbridge.gym.pool): the same API on Ray, local processes and
in-process; failures become WorkerError; a two-node Ray cluster on one machine.

The pool mechanics are checked on gymnasium's CartPole (fast); the compiler
environments run in pools in test_gym_inlining.py / test_gym_phase_ordering.py.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from mlbridge.gym.pool import BACKENDS, WorkerError, make_pool  # noqa: E402

ENV = "CartPole-v1"
LOCAL_BACKENDS = ["serial", "process"]


def _ray_or_skip():
    return pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray instance for the module's Ray tests (started once: ~3 s)."""
    ray = _ray_or_skip()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def _backends(request):
    if request.param == "ray":
        request.getfixturevalue("ray_local")
    return request.param


@pytest.fixture(params=list(BACKENDS))
def backend(request):
    return _backends(request)


@pytest.mark.slow
def test_rollouts_have_the_same_shape_everywhere(backend):
    with make_pool(ENV, 2, backend=backend, seed=7) as pool:
        rollouts = pool.rollout(None, 50)
        assert [r.steps for r in rollouts] == [50, 50]
        for r in rollouts:
            assert r.observations.shape == (50, 4)
            assert r.rewards.shape == r.terminated.shape == (50,)
            assert sum(e["length"] for e in r.episodes) <= 50
        # worker i is seeded with seed + i: the two workers differ
        assert not np.array_equal(rollouts[0].actions, rollouts[1].actions)


def test_seeded_pools_reproduce_each_other():
    runs = []
    for backend in LOCAL_BACKENDS:
        with make_pool(ENV, 2, backend=backend, seed=3) as pool:
            runs.append(pool.rollout(None, 40))
    for a, b in zip(*runs):
        assert np.array_equal(a.actions, b.actions)
        assert np.array_equal(a.observations, b.observations)


def test_reseeded_workers_make_the_same_rollouts(backend):
    # What a benchmark of the same work on every worker relies on.
    with make_pool(ENV, 2, backend=backend, seed=7) as pool:
        first = pool.rollout(None, 30)
        assert not np.array_equal(first[0].actions, first[1].actions)
        pool.call("reseed", [(11,), (11,)])
        again = pool.rollout(None, 30)
        assert np.array_equal(again[0].actions, again[1].actions)
        assert np.array_equal(again[0].observations, again[1].observations)
        assert not np.array_equal(again[0].observations[:5], first[0].observations[:5])


def test_policies_travel_to_the_workers(backend):
    with make_pool(ENV, 2, backend=backend) as pool:
        always_left = lambda obs: 0  # noqa: E731 (a lambda: pickled by value)
        for r in pool.rollout(always_left, 30):
            assert set(r.actions.tolist()) == {0}


def test_evaluate_deals_modules_and_keeps_their_order():
    with make_pool(ENV, 2, backend="serial") as pool:
        # CartPole has no modules: the reset option is ignored, one episode each
        results = pool.evaluate(lambda obs: 1, ["m0", "m1", "m2"])
        assert [r["module"] for r in results] == ["m0", "m1", "m2"]
        assert all(r["length"] > 0 for r in results)


@pytest.mark.parametrize("backend", LOCAL_BACKENDS + ["ray"])
def test_a_failing_policy_is_a_worker_error(request, backend):
    if backend == "ray":
        request.getfixturevalue("ray_local")

    def broken(obs):
        raise RuntimeError("policy says no")

    with make_pool(ENV, 2, backend=backend) as pool:
        with pytest.raises(WorkerError, match="policy says no"):
            pool.rollout(broken, 5)


@pytest.mark.parametrize("backend", ["process", "ray"])
def test_a_killed_worker_is_a_worker_error(request, backend):
    if backend == "ray":
        request.getfixturevalue("ray_local")
    with make_pool(ENV, 2, backend=backend) as pool:
        victim = pool.where()[1]["pid"]
        os.kill(victim, signal.SIGKILL)
        with pytest.raises(WorkerError, match="worker 1"):
            pool.rollout(None, 5)


@pytest.mark.parametrize("backend", ["process", "ray"])
@pytest.mark.slow
def test_a_stalled_worker_overruns_its_deadline(request, backend):
    if backend == "ray":
        request.getfixturevalue("ray_local")

    def slow(obs):
        time.sleep(2)
        return 0

    with make_pool(ENV, 1, backend=backend) as pool:
        start = time.monotonic()
        with pytest.raises(WorkerError, match="no answer within 0.5 s"):
            pool.call("rollout", [(slow, 1)], timeout=0.5)
        assert time.monotonic() - start < 60


def test_an_unknown_environment_fails_at_creation():
    with pytest.raises(WorkerError, match="NoSuchEnv"):
        make_pool("NoSuchEnv-v0", 1, backend="process")
    with pytest.raises(ValueError, match="unknown backend"):
        make_pool(ENV, 1, backend="threads")


@pytest.mark.slow
def test_two_node_ray_cluster_spreads_the_workers():
    """Two Ray nodes on this machine (ray.cluster_utils): one worker each."""
    ray = _ray_or_skip()
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        with make_pool(ENV, 2, backend="ray", address=cluster.address) as pool:
            nodes = {w["node"] for w in pool.where()}
            assert len(nodes) == 2, nodes
            assert [r.steps for r in pool.rollout(None, 20)] == [20, 20]
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()


@pytest.mark.parametrize("backend", LOCAL_BACKENDS)
def test_the_wrapper_runs_in_the_workers(backend):
    import functools

    short = functools.partial(gymnasium.wrappers.TimeLimit, max_episode_steps=3)
    with make_pool(ENV, 2, backend=backend, wrapper=short) as pool:
        for r in pool.rollout(None, 12):
            assert r.episodes and all(e["length"] <= 3 for e in r.episodes)

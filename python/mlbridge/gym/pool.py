"""Pools of rollout workers: Ray actors, local processes, or in-process.

One API whatever runs the workers::

    with make_pool("mlbridge/Inlining-v0", 2, backend="ray") as pool:
        rollouts = pool.rollout(None, steps=200)      # 200 random steps per worker

- ``backend="ray"``: each worker is a Ray actor (one CPU) holding its
  compiler session; ``address=None`` (or ``"local"``) starts a private Ray
  instance on this machine, listening on the loopback interface only, its
  files in a 0700 directory of its own (removed at :meth:`WorkerPool.close`);
  ``address="auto"`` or ``"HOST:PORT"`` joins a cluster started with
  ``ray start`` (docs/ray.md). Actors are spread over the nodes.
- ``backend="process"``: each worker is a local process (``spawn``), for a
  machine without Ray.
- ``backend="serial"``: the workers run in the caller's process, one after
  the other (debugging).

Every call has a deadline (``timeout``); a worker that dies or overruns it
raises :class:`WorkerError` naming the worker, and the pool stays usable for
:meth:`WorkerPool.close`.
"""

from __future__ import annotations

import ipaddress
import multiprocessing
import os
import shutil
import tempfile
import traceback
from abc import ABC, abstractmethod
from multiprocessing.connection import Connection
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import cloudpickle  # type: ignore[import-untyped]

from mlbridge.child_process import die_with_parent, from_lasting_thread
from mlbridge.errors import MlbridgeError
from mlbridge.gym.workers import ActionFn, EnvWrapper, Rollout, RolloutWorker

#: The backends of :func:`make_pool`.
BACKENDS = ("ray", "process", "serial")
#: Default deadline of one pool call, seconds.
DEFAULT_TIMEOUT = 3600.0


class WorkerError(MlbridgeError):
    """A worker failed, died or overran its deadline."""


Args = Tuple[Any, ...]


class WorkerPool(ABC):
    """Workers that each hold one environment; calls run on all in parallel."""

    def __init__(self, num_workers: int, timeout: float) -> None:
        if num_workers < 1:
            raise ValueError("a pool needs at least one worker")
        self.num_workers, self.timeout = num_workers, timeout

    @abstractmethod
    def call(
        self, method: str, args: Optional[Sequence[Args]] = None, timeout: Optional[float] = None
    ) -> List[Any]:
        """``worker.method(*args[i])`` on every worker i at once (no args:
        none); the results in worker order."""

    @abstractmethod
    def close(self) -> None:
        """Stops every worker (and its compiler)."""

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rollout(self, policy: Optional[ActionFn], steps: int) -> List[Rollout]:
        """``steps`` steps of ``policy`` (None: random) on every worker."""
        return self.call("rollout", [(policy, steps)] * self.num_workers)

    def evaluate(self, policy: Optional[ActionFn], modules: Sequence[str]) -> List[Dict[str, Any]]:
        """One episode per module, the modules dealt round-robin to the
        workers; the summaries in the order of ``modules``."""
        shares = [list(modules[i :: self.num_workers]) for i in range(self.num_workers)]
        results = self.call("evaluate", [(policy, share) for share in shares])
        by_name = {r["module"]: r for part in results for r in part}
        return [by_name[m] for m in modules]

    def where(self) -> List[Dict[str, Any]]:
        """Where each worker runs (host, pid, Ray node)."""
        return self.call("where")

    def _args(self, args: Optional[Sequence[Args]]) -> List[Args]:
        if args is None:
            return [()] * self.num_workers
        if len(args) != self.num_workers:
            raise ValueError(f"{len(args)} argument tuples for {self.num_workers} workers")
        return [tuple(a) for a in args]


class SerialPool(WorkerPool):
    """The workers in this process, called one after the other."""

    def __init__(
        self,
        env_id: str,
        num_workers: int,
        env_kwargs: Mapping[str, Any],
        seed: int,
        timeout: float,
        wrapper: Optional[EnvWrapper] = None,
    ) -> None:
        super().__init__(num_workers, timeout)
        self._workers = [
            RolloutWorker(env_id, env_kwargs, seed + i, wrapper) for i in range(num_workers)
        ]

    def call(
        self, method: str, args: Optional[Sequence[Args]] = None, timeout: Optional[float] = None
    ) -> List[Any]:
        out = []
        for i, (worker, a) in enumerate(zip(self._workers, self._args(args))):
            try:
                out.append(getattr(worker, method)(*a))
            except Exception as err:
                raise WorkerError(f"worker {i}: {method} failed: {err}") from err
        return out

    def close(self) -> None:
        for worker in self._workers:
            worker.close()
        self._workers = []


def _process_main(conn: Connection, payload: bytes, parent: int) -> None:
    """A process worker: builds its RolloutWorker, then serves calls."""
    die_with_parent(parent)  # and so do its compilers (mlbridge.child_process)
    try:
        worker = RolloutWorker(*cloudpickle.loads(payload))
        conn.send(("ok", None))
    except Exception:
        conn.send(("error", traceback.format_exc()))
        return
    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:
                return
            if message is None:
                return
            method, args = cloudpickle.loads(message)
            try:
                conn.send(("ok", cloudpickle.dumps(getattr(worker, method)(*args))))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    finally:
        worker.close()


class ProcessPool(WorkerPool):
    """One local process per worker (``spawn``: nothing inherited but the
    arguments), commanded over a pipe."""

    def __init__(
        self,
        env_id: str,
        num_workers: int,
        env_kwargs: Mapping[str, Any],
        seed: int,
        timeout: float,
        wrapper: Optional[EnvWrapper] = None,
    ) -> None:
        super().__init__(num_workers, timeout)
        context = multiprocessing.get_context("spawn")
        self._conns: List[Connection] = []
        self._procs: List[Any] = []
        try:
            for i in range(num_workers):
                ours, theirs = context.Pipe()
                payload = cloudpickle.dumps((env_id, dict(env_kwargs), seed + i, wrapper))
                proc = context.Process(
                    target=_process_main,
                    args=(theirs, payload, os.getpid()),
                    name=f"mlbridge-worker-{i}",
                )
                proc.daemon = True
                from_lasting_thread(proc.start)
                theirs.close()
                self._conns.append(ours)
                self._procs.append(proc)
            for i in range(num_workers):
                self._receive(i, "start", timeout)
        except BaseException:
            self.close()
            raise

    def _receive(self, i: int, method: str, timeout: float) -> Any:
        conn = self._conns[i]
        if not conn.poll(timeout):
            raise WorkerError(f"worker {i}: {method} gave no answer within {timeout:g} s")
        try:
            status, value = conn.recv()
        except (EOFError, OSError):
            code = self._procs[i].exitcode
            raise WorkerError(f"worker {i} died during {method} (exit code {code})") from None
        if status != "ok":
            raise WorkerError(f"worker {i}: {method} failed:\n{value}")
        return None if value is None else cloudpickle.loads(value)

    def call(
        self, method: str, args: Optional[Sequence[Args]] = None, timeout: Optional[float] = None
    ) -> List[Any]:
        for i, (conn, a) in enumerate(zip(self._conns, self._args(args))):
            try:
                conn.send(cloudpickle.dumps((method, a)))
            except (BrokenPipeError, OSError):
                code = self._procs[i].exitcode
                raise WorkerError(
                    f"worker {i} is gone before {method} (exit code {code})"
                ) from None
        limit = self.timeout if timeout is None else timeout
        return [self._receive(i, method, limit) for i in range(self.num_workers)]

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc in self._procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []


#: ``ray.init`` options of every pool that starts or joins Ray.
_RAY_OPTIONS: Dict[str, Any] = {
    "include_dashboard": False,
    "log_to_driver": False,
    "configure_logging": False,
}


class RayPool(WorkerPool):
    """One Ray actor (one CPU) per worker, spread over the cluster's nodes."""

    def __init__(
        self,
        env_id: str,
        num_workers: int,
        env_kwargs: Mapping[str, Any],
        seed: int,
        timeout: float,
        wrapper: Optional[EnvWrapper] = None,
        address: Optional[str] = None,
    ) -> None:
        super().__init__(num_workers, timeout)
        import ray

        self._ray = ray
        self._started_ray = False
        #: The 0700 directory holding the files of the Ray instance we started.
        self._private_dir: Optional[str] = None
        if not ray.is_initialized():
            if address in (None, "local"):  # "local": Ray's name for a new instance
                self._start_local_ray()
            else:
                ray.init(address=address, **_RAY_OPTIONS)
            self._started_ray = True
        actor = ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        self._actors: List[Any] = [
            actor.options(scheduling_strategy="SPREAD").remote(
                env_id, dict(env_kwargs), seed + i, wrapper
            )
            for i in range(num_workers)
        ]
        try:
            self.call("spaces", timeout=timeout)  # every actor built its environment
        except BaseException:
            self.close()
            raise

    def _start_local_ray(self) -> None:
        """Starts Ray on this machine for this pool alone: bound to the
        loopback interface, its temporary files under a new 0700 directory."""
        from ray._private import ray_constants

        self._private_dir = tempfile.mkdtemp(prefix="mlbridge-ray-")
        # Ray takes a node IP of 127.0.0.1 for a mistake and replaces it by
        # the machine's address, and then listens on every interface, unless
        # clusters are disabled (its default on macOS and Windows): disabled
        # while it starts (a private setting: the address is checked below).
        cluster = ray_constants.ENABLE_RAY_CLUSTER
        ray_constants.ENABLE_RAY_CLUSTER = False
        try:
            self._ray.init(
                address="local",  # never RAY_ADDRESS, nor a cluster `ray start` left
                _temp_dir=os.path.join(self._private_dir, "ray"),  # Ray makes it 0777
                **_RAY_OPTIONS,
            )
        except BaseException:
            self._remove_private_dir()
            raise
        finally:
            ray_constants.ENABLE_RAY_CLUSTER = cluster
        ip = self._ray.util.get_node_ip_address()
        if not ipaddress.ip_address(ip).is_loopback:
            self._ray.shutdown()
            self._remove_private_dir()
            raise WorkerError(f"Ray started on {ip}, not on the loopback interface: stopped it")

    def _remove_private_dir(self) -> None:
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None

    def call(
        self, method: str, args: Optional[Sequence[Args]] = None, timeout: Optional[float] = None
    ) -> List[Any]:
        ray = self._ray
        refs = [getattr(a, method).remote(*x) for a, x in zip(self._actors, self._args(args))]
        limit = self.timeout if timeout is None else timeout
        out = []
        for i, ref in enumerate(refs):
            try:
                out.append(ray.get(ref, timeout=limit))
            except ray.exceptions.GetTimeoutError:
                raise WorkerError(
                    f"worker {i}: {method} gave no answer within {limit:g} s"
                ) from None
            except ray.exceptions.RayActorError as err:
                raise WorkerError(f"worker {i} died during {method}: {err}") from None
            except ray.exceptions.RayTaskError as err:
                raise WorkerError(f"worker {i}: {method} failed: {err}") from None
        return out

    def close(self) -> None:
        ray = self._ray
        for a in self._actors:
            try:
                ray.get(a.close.remote(), timeout=30)
            except Exception:  # a dead actor is killed below anyway
                pass
            ray.kill(a)
        self._actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False
        self._remove_private_dir()


def make_pool(
    env_id: str,
    num_workers: int,
    env_kwargs: Optional[Mapping[str, Any]] = None,
    *,
    backend: str = "ray",
    address: Optional[str] = None,
    seed: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    wrapper: Optional[EnvWrapper] = None,
) -> WorkerPool:
    """``num_workers`` workers each holding ``gymnasium.make(env_id,
    **env_kwargs)`` (then ``wrapper(env)`` when given: it must be picklable,
    e.g. a class or a module-level function); worker i is seeded with
    ``seed + i``."""
    kwargs = dict(env_kwargs or {})
    if backend == "ray":
        return RayPool(env_id, num_workers, kwargs, seed, timeout, wrapper, address)
    if address is not None:
        raise ValueError("address is for the ray backend")
    if backend == "process":
        return ProcessPool(env_id, num_workers, kwargs, seed, timeout, wrapper)
    if backend == "serial":
        return SerialPool(env_id, num_workers, kwargs, seed, timeout, wrapper)
    raise ValueError(f"unknown backend {backend!r} (one of {', '.join(BACKENDS)})")

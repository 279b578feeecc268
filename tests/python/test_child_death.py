"""A killed parent leaves no child behind (mlbridge.child_process, docs/gym.md).

Every compiler, service or host the package starts dies with the process
that started it, whatever kills that process, SIGKILL included. Each test
starts the parent in a process of its own (a small driver script, or the
CLI), waits until the compilers it started run (paused at a call site by a
policy that never answers), SIGKILLs the parent (for Ray: one worker actor,
or the driver), and checks that none of the processes recorded before the
kill survives within DEADLINE seconds. Whatever survives is killed at the
end, so that a failing run leaves nothing spinning.

A dead orphan is a zombie until init reaps it: it counts as dead. The test
process is no child subreaper: Ray's workers notice that their raylet died
by being adopted by init, and would not under one. When the Ray driver
dies, Ray stops its actors itself (their environments then stop their
compilers): that test guards the path, the others fail without
mlbridge.child_process. Nothing here depends on fs.protected_* (the FIFOs
live in private temporary directories). The last tests check the helper
itself: sessions, the spawner thread, run()'s group kills.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set

import pytest

import mlbridge

#: Where the package under test is imported from (the drivers import it too).
PACKAGE_ROOT = Path(mlbridge.__file__).resolve().parents[1]
DEMO_SOURCE = PACKAGE_ROOT / "mlbridge" / "corpus" / "bundled" / "expr.c"
#: Seconds the children have to die after their parent was killed.
DEADLINE = 15.0
#: Seconds a parent has to start its compilers (Ray starts a cluster first).
START_TIMEOUT = 90.0

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None, reason="needs clang-19")
needs_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux's"
)
pytestmark = [needs_linux, needs_clang]

#: A policy that never answers: the compiler waits at its call site.
STALL_POLICY = """\
import os
import time


def policy(features):
    marker = os.environ.get("STALL_MARKER")
    if marker:
        open(marker, "w").close()
    time.sleep(600)
    return 0
"""

#: A pool's driver: prints the workers' pids, then a rollout that stalls.
POOL_DRIVER = """\
import json
import sys
import time

from mlbridge.gym.pool import make_pool


def stall(observation):
    time.sleep(600)  # the worker's compiler waits at its call site meanwhile
    return 0


if __name__ == "__main__":  # not in the process pool's workers (spawn)
    backend, modules = sys.argv[1], sys.argv[2:]
    extra = {"address": "local"} if backend == "ray" else {}  # a private cluster
    pool = make_pool("mlbridge/Inlining-v0", 2, {"modules": modules}, backend=backend, **extra)
    print(json.dumps([worker["pid"] for worker in pool.where()]), flush=True)
    pool.rollout(stall, 100)
"""

#: The loop's pipe evaluation, by hand: ``mlbridge serve`` (pipe_server)
#: serving clang-19 with mlbridge's plugin (compile_program).
SERVE_DRIVER = """\
import json
import sys
from pathlib import Path

from mlbridge.corpus import Program
from mlbridge.problems.inlining.loop.evaluate import pipe_server, plugin_for
from mlbridge.problems.inlining.toolchain import compile_program

plugin, policy, source, work = sys.argv[1:5]
base = str(Path(work) / "inline")
command = [sys.executable, "-m", "mlbridge", "serve", "--pipe", base, "--create",
           "--policy", policy, "--sessions", "0"]
with pipe_server(command, base) as server:
    print(json.dumps([server.pid]), flush=True)
    setup = plugin_for("pipe", Path(plugin), Path(work), Path(work), base)
    program = Program("stalled", (Path(source),), (), "train")
    compile_program(program, Path(work) / "out", setup, jobs=1)
"""


# -- processes, as /proc shows them ------------------------------------------


@dataclass(frozen=True)
class Proc:
    """A process, named by its pid and start time (a reused pid is another)."""

    pid: int
    start: int

    def state(self) -> Optional[str]:
        """Its state letter (R, S, Z, ...), or None when it is gone."""
        stat = _stat(self.pid)
        if stat is None or stat[2] != self.start:
            return None
        return stat[1]

    def alive(self) -> bool:
        """It exists and is no zombie (a zombie has died: only its entry is left)."""
        return self.state() not in (None, "Z", "X")

    def argv0(self) -> str:
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as cmdline:
                return os.path.basename(cmdline.read().split(b"\0")[0].decode(errors="replace"))
        except OSError:
            return ""


def _stat(pid: int):
    """(ppid, state, start time) of ``pid``, or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0], int(fields[19])


def _descendants(root: int) -> List[Proc]:
    """Every live process below ``root``."""
    parents: Dict[int, List[Proc]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                parents.setdefault(stat[0], []).append(Proc(int(entry), stat[2]))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return [p for p in found if p.alive()]


def _proc(pid: int) -> Proc:
    stat = _stat(pid)
    assert stat is not None, f"no process {pid}"
    return Proc(pid, stat[2])


def _survivors(procs: Sequence[Proc], seconds: float = DEADLINE) -> List[Proc]:
    """The processes of ``procs`` still alive after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [p for p in procs if p.alive()]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


class Parents:
    """The parents a test starts, and every process seen below them, all
    killed at the end (the parents reaped)."""

    def __init__(self) -> None:
        self.started: List[subprocess.Popen] = []
        self.seen: Set[Proc] = set()

    def start(self, command: Sequence[str], **kwargs) -> subprocess.Popen:
        parent = subprocess.Popen(list(command), stdout=subprocess.PIPE, text=True, **kwargs)
        self.started.append(parent)
        return parent

    def below(self, pid: int) -> List[Proc]:
        procs = _descendants(pid)
        self.seen.update(procs)
        return procs

    def compilers(self, pid: int) -> List[Proc]:
        """The compilers (clang-19) running below ``pid``."""
        return [p for p in self.below(pid) if p.argv0().startswith("clang")]

    def first_line(self, parent: subprocess.Popen) -> str:
        """The first line ``parent`` prints (within START_TIMEOUT seconds)."""
        assert parent.stdout is not None
        ready, _, _ = select.select([parent.stdout], [], [], START_TIMEOUT)
        assert ready, f"the parent printed nothing within {START_TIMEOUT:g} s"
        line = parent.stdout.readline()
        assert line, f"the parent exited ({parent.wait()}) before it printed its children"
        return line

    def wait_for(self, what: Callable[[], List[Proc]], parent: subprocess.Popen) -> List[Proc]:
        """``what()`` once it is not empty (the parent must not exit meanwhile)."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            found = what()
            if found:
                return found
            assert parent.poll() is None, f"the parent exited ({parent.returncode})"
            time.sleep(0.1)
        raise AssertionError(f"nothing started within {START_TIMEOUT:g} s")

    def kill(self, parent: subprocess.Popen) -> None:
        """SIGKILLs ``parent`` (everything below it recorded first) and
        reaps it: no zombie of ours is left."""
        self.below(parent.pid)
        parent.kill()
        parent.wait()

    def cleanup(self) -> None:
        """Kills the parents and everything seen below them."""
        for parent in self.started:
            if parent.poll() is None:  # (a reaped parent's pid may be another's)
                self.kill(parent)
            if parent.stdout is not None:
                parent.stdout.close()
        for proc in self.seen:
            if proc.alive():
                os.kill(proc.pid, signal.SIGKILL)


@pytest.fixture
def parents() -> Iterator[Parents]:
    tracked = Parents()
    try:
        yield tracked
    finally:
        tracked.cleanup()


def _no_survivor(procs: Sequence[Proc], what: str) -> None:
    assert procs, f"no {what} recorded"
    left = _survivors(procs)
    details = [(p.pid, p.argv0(), p.state()) for p in left]
    assert not left, f"{what} outlived their parent by {DEADLINE:g} s: {details}"


# -- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> List[str]:
    """The bundled demo programs as bitcode files."""
    from mlbridge.corpus.defaults import bundled_programs
    from mlbridge.gym.modules import prepare_modules

    out = tmp_path_factory.mktemp("modules")
    return [str(m.bitcode) for m in prepare_modules(bundled_programs(), out)]


@pytest.fixture
def stall_policy(tmp_path) -> Path:
    path = tmp_path / "stall.py"
    path.write_text(STALL_POLICY)
    return path


def _script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _driver_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PACKAGE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env.update(extra)
    return env


def _start_pool(parents: Parents, tmp_path: Path, backend: str, modules: List[str]):
    """The pool's driver, and its workers' pids once each runs a compiler."""
    driver = _script(tmp_path, "pool_driver.py", POOL_DRIVER)
    parent = parents.start(
        [sys.executable, str(driver), backend, *modules], cwd=tmp_path, env=_driver_env()
    )
    workers: List[int] = json.loads(parents.first_line(parent))
    busy = workers[:1] if backend == "serial" else workers  # serial: one after the other
    for pid in busy:
        parents.wait_for(lambda pid=pid: parents.compilers(pid), parent)
    return parent, workers


# -- pools ---------------------------------------------------------------------


def _ray_or_skip() -> None:
    pytest.importorskip("ray")
    pytest.importorskip("gymnasium")


@pytest.mark.slow
def test_a_killed_ray_worker_leaves_no_compiler(parents, tmp_path, modules):
    _ray_or_skip()
    parent, workers = _start_pool(parents, tmp_path, "ray", modules)
    victim = _proc(workers[1])
    compilers = parents.compilers(victim.pid)
    os.kill(victim.pid, signal.SIGKILL)
    _no_survivor(compilers, "the killed Ray worker's compilers")
    others = parents.compilers(workers[0])
    assert others and all(p.alive() for p in others), "the other worker's compiler is gone"


@pytest.mark.slow
def test_a_killed_ray_driver_leaves_no_compiler(parents, tmp_path, modules):
    _ray_or_skip()
    parent, workers = _start_pool(parents, tmp_path, "ray", modules)
    compilers = [c for pid in workers for c in parents.compilers(pid)]
    parents.kill(parent)
    _no_survivor(compilers, "the Ray workers' compilers")


@pytest.mark.slow
def test_a_killed_process_pool_driver_leaves_no_worker_or_compiler(parents, tmp_path, modules):
    pytest.importorskip("gymnasium")
    parent, workers = _start_pool(parents, tmp_path, "process", modules)
    recorded = [_proc(pid) for pid in workers]
    recorded += [c for pid in workers for c in parents.compilers(pid)]
    parents.kill(parent)
    _no_survivor(recorded, "the process pool's workers and compilers")


def test_a_killed_serial_pool_driver_leaves_no_compiler(parents, tmp_path, modules):
    pytest.importorskip("gymnasium")
    parent, _ = _start_pool(parents, tmp_path, "serial", modules)
    compilers = parents.compilers(parent.pid)
    parents.kill(parent)
    _no_survivor(compilers, "the serial pool's compilers")


# -- the CLIs ------------------------------------------------------------------


def test_a_killed_mlbridge_llvm_leaves_no_compiler(parents, tmp_path, stall_policy):
    marker = tmp_path / "asked"
    parent = parents.start(
        [sys.executable, "-m", "mlbridge", "llvm", "--problem", "inlining"]
        + ["--policy", f"{stall_policy}:policy", "--"]
        + ["clang-19", "-Oz", "-c", str(DEMO_SOURCE), "-o", str(tmp_path / "expr.o")],
        cwd=tmp_path,
        env=_driver_env(STALL_MARKER=str(marker)),
    )
    # The compiler waits at its first call site: the policy was asked.
    parents.wait_for(lambda: parents.compilers(parent.pid) if marker.exists() else [], parent)
    compilers = parents.compilers(parent.pid)
    parents.kill(parent)
    _no_survivor(compilers, "mlbridge llvm's compilers")


def test_a_killed_loop_leaves_no_mlbridge_serve_or_compiler(parents, tmp_path, stall_policy):
    from mlbridge.native import NativeError, plugin_path

    try:
        plugin = plugin_path()
    except NativeError as err:
        pytest.skip(f"needs mlbridge's plugin: {err}")
    marker = tmp_path / "asked"
    driver = _script(tmp_path, "serve_driver.py", SERVE_DRIVER)
    parent = parents.start(
        [sys.executable, str(driver), str(plugin), f"{stall_policy}:policy"]
        + [str(DEMO_SOURCE), str(tmp_path)],
        cwd=tmp_path,
        env=_driver_env(STALL_MARKER=str(marker)),
    )
    host = _proc(json.loads(parents.first_line(parent))[0])
    # mlbridge serve was asked: the compiler waits for its answer.
    parents.wait_for(lambda: parents.compilers(parent.pid) if marker.exists() else [], parent)
    recorded = [host, *parents.compilers(parent.pid)]
    parents.kill(parent)
    _no_survivor(recorded, "mlbridge serve and the compiler it served")


# -- the helper itself ---------------------------------------------------------


def _dies_soon(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` is gone (or a zombie) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        stat = _stat(pid)
        if stat is None or stat[1] in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_a_child_runs_in_a_session_of_its_own():
    from mlbridge import child_process

    with child_process.popen(["sleep", "30"]) as child:
        assert os.getsid(child.pid) == child.pid != os.getsid(0)
    assert child.returncode == -signal.SIGKILL  # leaving ``with`` killed it


def test_a_child_outlives_the_thread_that_started_it():
    # PR_SET_PDEATHSIG fires when the forking *thread* ends: the spawner
    # thread forks for every thread but the main one.
    import threading

    from mlbridge import child_process

    started = []
    thread = threading.Thread(target=lambda: started.append(child_process.popen(["sleep", "30"])))
    thread.start()
    thread.join()
    child = started[0]
    time.sleep(0.5)
    try:
        assert child.poll() is None, f"the child died with its thread ({child.returncode})"
    finally:
        child.stop()


@pytest.mark.slow
def test_run_kills_the_group_on_a_timeout():
    from mlbridge import child_process

    with pytest.raises(subprocess.TimeoutExpired) as caught:
        child_process.run(
            ["sh", "-c", "sleep 30 & echo $!; wait"], capture_output=True, text=True, timeout=1
        )
    assert _dies_soon(int(caught.value.stdout.split()[0]))


def test_run_kills_what_the_child_left_in_its_group():
    from mlbridge import child_process

    done = child_process.run(
        ["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert _dies_soon(int(done.stdout.split()[0]))


def test_run_behaves_as_subprocess_run():
    from mlbridge import child_process

    done = child_process.run(["cat"], input="abc", capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "abc", "")
    with pytest.raises(subprocess.CalledProcessError) as caught:
        child_process.run(["sh", "-c", "echo out; exit 3"], capture_output=True, check=True)
    assert (caught.value.returncode, caught.value.stdout) == (3, b"out\n")
    with pytest.raises(TypeError, match="start_new_session"):
        child_process.popen(["true"], start_new_session=False)

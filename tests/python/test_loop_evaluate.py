"""`mlbridge loop`'s evaluation step without a compiler: the pipe server it
starts for the ``pipe`` configuration (:func:`mlbridge.problems.inlining.loop.evaluate.pipe_server`)
is always killed and reaped, and a server that fails to start is reported
with its stderr without ever blocking on that stderr.

The servers here are small Python scripts standing in for ``mlbridge serve``.
Each test bounds itself (no pytest-timeout plugin): the code under test runs
in a thread, and if it does not return in time the test kills the stand-in
processes (so the thread ends) and fails.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from mlbridge.errors import MlbridgeError
from mlbridge.problems.inlining.loop.evaluate import pipe_server

#: Longest a call under test may take before the test calls it hung.
GUARD_SECONDS = 20.0


def _kill_recorded(pid_files: List[Path]) -> None:
    """SIGKILL every process whose pid a stand-in recorded (gone ones ignored)."""
    for path in pid_files:
        try:
            pid = int(path.read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _bounded(call: Callable[[], Any], pid_files: List[Path]) -> Dict[str, Any]:
    """Run ``call`` in a thread for at most GUARD_SECONDS.

    Returns ``{"value": ...}`` or ``{"error": exception}``. When ``call`` hangs,
    the processes recorded in ``pid_files`` are killed (which unblocks it) and
    the test fails.
    """
    outcome: Dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as err:  # handed to the test thread
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(GUARD_SECONDS)
    if thread.is_alive():
        _kill_recorded(pid_files)
        thread.join(5)
        pytest.fail(f"the call hung for {GUARD_SECONDS:g} s (until its processes were killed)")
    outcome["seconds"] = time.monotonic() - start
    return outcome


def _script(tmp_path: Path, body: str) -> List[str]:
    """The command running ``body`` (dedented) as a Python script."""
    path = tmp_path / "server.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def _try_to_start(command: List[str], base: str, ready_timeout: float) -> None:
    with pipe_server(command, base, ready_timeout=ready_timeout):
        pass


@pytest.mark.slow
def test_a_server_that_never_gets_ready_nor_exits_is_killed_then_reported(tmp_path):
    """Alive, stderr open, no FIFOs: reading its stderr before killing it
    would wait forever."""
    pid_file = tmp_path / "server.pid"
    command = _script(
        tmp_path,
        f"""
        import os, sys, time
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        sys.stderr.write("stand-in: listening nowhere\\n")
        sys.stderr.flush()
        time.sleep(3600)
        """,
    )
    outcome = _bounded(lambda: _try_to_start(command, str(tmp_path / "inline"), 1.0), [pid_file])
    error = outcome.get("error")
    assert isinstance(error, MlbridgeError), outcome
    assert "still running after 1 s" in str(error)
    assert "stand-in: listening nowhere" in str(error)
    assert outcome["seconds"] < 10
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process left
        os.kill(pid, 0)


def test_a_server_that_exits_leaving_a_child_on_its_stderr_is_reported(tmp_path):
    """The server dies at once but a child of it keeps its stderr open: reading
    that stderr to its end would wait for the child."""
    child_pid = tmp_path / "child.pid"
    command = _script(
        tmp_path,
        f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        open({str(child_pid)!r}, "w").write(str(child.pid))
        sys.stderr.write("stand-in: bad policy\\n")
        sys.exit(3)
        """,
    )
    try:
        outcome = _bounded(
            lambda: _try_to_start(command, str(tmp_path / "inline"), 15.0), [child_pid]
        )
        error = outcome.get("error")
        assert isinstance(error, MlbridgeError), outcome
        assert "exited with status 3" in str(error)
        assert "stand-in: bad policy" in str(error)
    finally:
        _kill_recorded([child_pid])


def test_a_ready_server_is_yielded_then_killed(tmp_path):
    base = tmp_path / "inline"
    pid_file = tmp_path / "server.pid"
    command = _script(
        tmp_path,
        f"""
        import os, time
        os.mkfifo({str(base) + ".in"!r})
        os.mkfifo({str(base) + ".out"!r})
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(3600)
        """,
    )

    def serve() -> int:
        with pipe_server(command, str(base), ready_timeout=15.0) as server:
            assert server.poll() is None
            assert Path(str(base) + ".in").exists()
            process = server
        # Stopped as every compiler session is: SIGTERM, SIGKILL after a grace.
        assert process.returncode in (-signal.SIGTERM, -signal.SIGKILL)
        return process.pid

    outcome = _bounded(serve, [pid_file])
    assert "error" not in outcome, outcome
    assert outcome["value"] == int(pid_file.read_text())

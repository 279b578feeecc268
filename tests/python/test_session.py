"""The compiler-session layer (mlbridge.session): one way to run a compiler.

- CompilerSession / run_session: stdin closed, the end of stderr kept
  (bounded), a deadline, servers run beside the compiler and joined, the
  process group stopped on every exit path (SIGTERM, SIGKILL after the
  grace for a compiler that ignores it);
- run_tool: one error for a command that cannot start, runs too long or
  fails, with the end of its stderr;
- no other module of the package starts a process itself.
"""

from __future__ import annotations

import ast
import signal
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

from mlbridge.errors import MlbridgeError
from mlbridge.session import (
    STDERR_KEEP,
    CompilerSession,
    ToolError,
    exit_message,
    run_session,
    run_tool,
)

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "mlbridge"


def _python(code: str) -> List[str]:
    return [sys.executable, "-c", code]


def test_a_session_keeps_the_end_of_stderr_and_the_exit_status() -> None:
    code = "import sys; sys.stderr.write('x' * (3 << 20) + 'END'); sys.exit(3)"
    done = run_session(_python(code), timeout=60)
    assert done.returncode == 3 and not done.timed_out
    assert len(done.stderr) == STDERR_KEEP and done.stderr.endswith("END")


def test_a_session_runs_its_servers_and_joins_them() -> None:
    seen: List[int] = []

    def server(session: CompilerSession) -> None:
        time.sleep(0.2)
        seen.append(session.pid)

    started: List[CompilerSession] = []
    done = run_session(_python("pass"), timeout=60, on_start=started.append, servers=[server])
    assert done.returncode == 0 and seen == [started[0].pid]
    assert not started[0].alive()


def test_a_session_past_its_deadline_is_stopped_even_when_it_ignores_sigterm() -> None:
    code = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "sys.stderr.write('waiting\\n'); sys.stderr.flush(); time.sleep(60)"
    )
    start = time.monotonic()
    done = run_session(_python(code), timeout=1.0, grace=0.5)
    assert done.timed_out and done.returncode == -signal.SIGKILL
    assert "waiting" in done.stderr
    assert time.monotonic() - start < 30


def test_a_failing_server_stops_the_compiler_and_an_exception_goes_on() -> None:
    def server(session: CompilerSession) -> None:
        session.kill()  # what a server does when serving fails

    done = run_session(_python("import time; time.sleep(60)"), timeout=60, servers=[server])
    assert done.returncode == -signal.SIGTERM and not done.timed_out

    class Interrupted(Exception):
        pass

    sessions: List[CompilerSession] = []

    def interrupt(session: CompilerSession) -> None:
        sessions.append(session)
        raise Interrupted

    with pytest.raises(Interrupted):
        run_session(_python("import time; time.sleep(60)"), timeout=60, on_start=interrupt)
    assert sessions[0].returncode is not None and sessions[0].returncode < 0


def test_kill_from_another_thread_and_leaving_the_session_stop_the_group() -> None:
    with CompilerSession(_python("import time; time.sleep(60)")) as session:
        assert session.alive() and session.poll() is None
        threading.Thread(target=session.kill).start()
        assert session.wait(30) == -signal.SIGTERM
    with CompilerSession(_python("import time; time.sleep(60)")) as left:
        pass
    assert left.returncode is not None and left.returncode < 0 and not left.alive()


def test_run_tool_says_why_a_command_failed() -> None:
    assert run_tool(_python("print('out')"), timeout=60).stdout == "out\n"
    with pytest.raises(ToolError) as failed:
        run_tool(_python("import sys; sys.stderr.write('bad input'); sys.exit(2)"), timeout=60)
    err = failed.value
    assert err.returncode == 2 and err.stderr == "bad input" and not err.timed_out
    assert str(err).endswith("failed (2): bad input")
    with pytest.raises(ToolError) as slow:
        run_tool(_python("import time; time.sleep(60)"), timeout=0.5, what="the slow one")
    assert slow.value.timed_out and slow.value.returncode is None
    assert str(slow.value) == "the slow one ran longer than 0.5 s"
    with pytest.raises(ToolError) as missing:
        run_tool(["/nonexistent/compiler"], timeout=5)
    assert missing.value.returncode is None and "cannot run /nonexistent/compiler" in str(
        missing.value
    )

    class Mine(MlbridgeError):
        pass

    with pytest.raises(Mine, match="failed \\(1\\)"):
        run_tool(_python("raise SystemExit(1)"), timeout=60, error=Mine)


def test_run_tool_feeds_its_input_and_keeps_only_the_tail() -> None:
    echo = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    assert run_tool(_python(echo), timeout=60, input="abc").stdout == "ABC"
    noisy = "import sys; sys.stderr.write('a' * 5000 + 'Z'); sys.exit(1)"
    with pytest.raises(ToolError) as failed:
        run_tool(_python(noisy), timeout=60, tail=10)
    assert str(failed.value).endswith(": " + "a" * 9 + "Z") and len(failed.value.stderr) == 5001


def test_exit_messages_name_the_signal() -> None:
    assert exit_message(-signal.SIGKILL) == "the compiler was killed by SIGKILL"
    assert exit_message(1, "the service") == "the service failed (exit status 1)"
    assert exit_message(-200) == "the compiler was killed by signal 200"


#: Modules that start processes themselves: the two layers that do it for
#: everyone, the one lookup of pkg-config (no compiler) where the native
#: half is, and the pipeline wrapper, a script of the standard library alone
#: that a build runs as its compiler (it cannot import mlbridge there).
STARTERS = {
    "child_process.py",
    "session/process.py",
    "session/tool.py",
    "native.py",
    "problems/phase_ordering/pipeline_wrapper.py",
}
#: Calls that start a process.
STARTING = {"popen", "Popen", "run", "call", "check_call", "check_output", "spawnv", "system"}


def test_no_module_outside_the_session_layer_starts_a_process() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in STARTERS or relative.startswith("v1/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module in (
                "subprocess",
                "mlbridge.child_process",
            ):
                taken = {alias.name for alias in node.names} & STARTING
                found += [f"{relative}:{node.lineno}: imports {name}" for name in taken]
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            if (
                isinstance(owner, ast.Name)
                and owner.id in ("subprocess", "child_process", "os")
                and node.func.attr in STARTING
            ):
                found.append(f"{relative}:{node.lineno}: {owner.id}.{node.func.attr}")
    assert not found, found

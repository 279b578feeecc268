"""How ``mlbridge`` and ``mlbridge-aot`` fail (docs/cli.md): every known bad input
gives exactly one line on stderr, ``PROG: error: MESSAGE``, and its documented
exit code; never a traceback; no temporary file left behind.

The commands run as real processes (the venv's ``mlbridge`` entry points), as a
user would run them. The table at the top holds the cases that need nothing but
arguments and files; the cases below it need a compiler, a server or a signal.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import pytest

from mlbridge import __version__, cli_errors
from mlbridge.cli_errors import (
    ENVIRONMENT,
    FAILURE,
    INTERNAL,
    INTERRUPTED,
    OK,
    POLICY_FAILED,
    TERMINATED,
    USAGE,
    run_command,
)

BIN = Path(sys.executable).parent
HAS_CLANG = shutil.which("clang-19") is not None and shutil.which("llc-19") is not None
needs_clang = pytest.mark.skipif(not HAS_CLANG, reason="clang-19 / llc-19 not installed")

SOURCE = """\
static int sq(int x) { return x * x; }
static int add(int a, int b) { return sq(a) + sq(b); }
int f(int a, int b) { return add(a, b) + add(b, a); }
"""
RAISING_POLICY = "def decide(features):\n    raise RuntimeError('boom from the policy')\n"
#: A policy that takes a minute to decide; it first creates the file named by
#: $DECIDING, if set, to say it is deciding.
SLOW_POLICY = (
    "import os, time\n\ndef decide(features):\n"
    "    if os.environ.get('DECIDING'):\n"
    "        open(os.environ['DECIDING'], 'w').close()\n"
    "    time.sleep(60)\n    return 0\n"
)
#: A ``grpc`` package that is not there (as when grpcio is not installed).
HIDDEN_GRPC = "raise ModuleNotFoundError(\"No module named 'grpc'\", name='grpc')\n"


def hide(module: str) -> str:
    """A sitecustomize.py making ``module`` unimportable (and unfindable)."""
    return f"import sys\nsys.modules[{module!r}] = None\n"


INLINE_POLICY_FAILED = (
    "mlbridge llvm: error: the inlining policy failed on observation 0 of "
    "context '': RuntimeError: boom from the policy (the compiler was "
    "stopped)"
)


def command(name: str) -> List[str]:
    """The venv's entry point ``name`` (``mlbridge``, ``mlbridge-aot``)."""
    script = BIN / name
    if script.exists():
        return [str(script)]
    module = {"mlbridge": "mlbridge", "mlbridge-aot": "mlbridge.aot"}[name]
    return [sys.executable, "-m", module]


def run(
    argv: Sequence[str],
    cwd: Optional[Path] = None,
    env: Optional[Dict[str, str]] = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """Run ``mlbridge ARGV`` (or ``mlbridge-aot ...`` when argv[0] is that)."""
    prog = command(argv[0]) if argv[0] in ("mlbridge", "mlbridge-aot") else None
    full = (prog + list(argv[1:])) if prog else command("mlbridge") + list(argv)
    full_env = dict(os.environ, **(env or {}))
    full_env.pop(cli_errors.DEBUG_VARIABLE, None)
    return subprocess.run(
        full, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def assert_one_line(done: subprocess.CompletedProcess, code: int, line: str) -> None:
    """Exit ``code`` and stderr exactly ``line`` (a prefix when it ends with '...')."""
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, (done.returncode, done.stderr)
    assert len(lines) == 1, done.stderr
    if line.endswith("..."):
        assert lines[0].startswith(line[:-3]), lines[0]
    else:
        assert lines[0] == line


@dataclass
class Case:
    """``mlbridge ARGS`` in a directory prepared by ``files``: exit code, stderr line.

    ``{tmp}`` in the arguments and the line is the test's directory.
    """

    args: Sequence[str]
    code: int
    line: str
    files: Optional[Dict[str, str]] = None
    env: Optional[Dict[str, str]] = None


#: The bad inputs of issue 12 and those a new user meets (docs/cli.md, "Known failures").
CASES = {
    "timeout-not-a-number": Case(
        ["serve", "--pipe", "{tmp}/c", "--policy", "zeros", "--timeout", "abc"],
        USAGE,
        "mlbridge serve: error: argument --timeout: expected a positive number of seconds, "
        "got 'abc' (see 'mlbridge serve --help')",
    ),
    "timeout-zero": Case(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "default",
            "--timeout",
            "0",
            "--",
            "clang-19",
            "-c",
            "f.c",
        ],
        USAGE,
        "mlbridge llvm: error: argument --timeout: expected a positive number of seconds, "
        "got '0' (see 'mlbridge llvm --help')",
    ),
    "max-requests-negative": Case(
        ["serve", "--pipe", "{tmp}/c", "--policy", "zeros", "--max-requests", "-5"],
        USAGE,
        "mlbridge serve: error: argument --max-requests: expected a whole number >= 1, "
        "got '-5' (see 'mlbridge serve --help')",
    ),
    "sessions-negative": Case(
        ["serve", "--pipe", "{tmp}/c", "--policy", "zeros", "--sessions", "-1"],
        USAGE,
        "mlbridge serve: error: argument --sessions: expected a whole number >= 0, "
        "got '-1' (see 'mlbridge serve --help')",
    ),
    "size-not-a-size": Case(
        ["serve", "--grpc", "unix:{tmp}/s", "--policy", "zeros", "--session-memory", "lots"],
        USAGE,
        "mlbridge serve: error: argument --session-memory: expected a size in bytes "
        ">= 1 (e.g. 1048576, 64M, 1G), got 'lots' (see 'mlbridge serve --help')",
    ),
    "no-command": Case(
        [],
        USAGE,
        "mlbridge: error: the following arguments are required: command (see 'mlbridge --help')",
    ),
    "unknown-command": Case(
        ["compile"],
        USAGE,
        "mlbridge: error: argument command: invalid choice: 'compile' (choose from ...",
    ),
    "llvm-no-compiler-command": Case(
        ["llvm", "--problem", "inlining", "--policy", "default"],
        USAGE,
        "mlbridge llvm: error: no compiler command given (mlbridge llvm ... -- COMMAND...)",
    ),
    "llvm-compiler-not-on-path": Case(
        ["llvm", "--problem", "inlining", "--policy", "default", "--", "clang-nope", "-c", "f.c"],
        ENVIRONMENT,
        "mlbridge llvm: error: the compiler 'clang-nope' is not on PATH",
    ),
    "llvm-policy-without-meaning": Case(
        ["llvm", "--problem", "regalloc-eviction", "--policy", "always", "--", "llc-19"],
        USAGE,
        "mlbridge llvm: error: --policy always: policy 'always' has no meaning for "
        "regalloc-eviction",
    ),
    "policy-file-missing": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "missing.py:decide"],
        USAGE,
        "mlbridge serve: error: --policy missing.py:decide: policy file missing.py does not exist",
    ),
    "policy-function-missing": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "p.py:missing_fn"],
        USAGE,
        "mlbridge serve: error: --policy p.py:missing_fn: p.py defines no 'missing_fn'",
        files={"p.py": "def decide(features):\n    return 0\n"},
    ),
    "policy-module-missing": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "no_such_module:decide"],
        USAGE,
        "mlbridge serve: error: --policy no_such_module:decide: cannot import policy module "
        "no_such_module: No module named 'no_such_module'",
    ),
    "policy-file-raises-on-import": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "p.py:decide"],
        USAGE,
        "mlbridge serve: error: --policy p.py:decide: policy file p.py failed to load: "
        "ZeroDivisionError: division by zero",
        files={"p.py": "1 / 0\n"},
    ),
    "onnx-model-missing": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "missing.onnx"],
        USAGE,
        "mlbridge serve: error: --policy missing.onnx: cannot load ONNX model: missing.onnx: "
        "cannot read: No such file or directory",
    ),
    "onnx-model-not-onnx": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "g.onnx"],
        USAGE,
        "mlbridge serve: error: --policy g.onnx: cannot load ONNX model 'g.onnx': ...",
        files={"g.onnx": "garbage\n"},
    ),
    "pipe-directory-missing": Case(
        ["serve", "--pipe", "{tmp}/no/c", "--create", "--policy", "zeros"],
        USAGE,
        "mlbridge serve: error: --pipe {tmp}/no/c: the directory {tmp}/no does not exist",
    ),
    "pipe-fifos-missing-without-create": Case(
        ["serve", "--pipe", "{tmp}/c", "--policy", "zeros"],
        USAGE,
        "mlbridge serve: error: --pipe {tmp}/c: {tmp}/c.in does not exist (give --create to "
        "make the FIFOs, or make them first: mkfifo {tmp}/c.in {tmp}/c.out)",
    ),
    "pipe-exists-with-create": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "zeros"],
        USAGE,
        "mlbridge serve: error: --pipe {tmp}/c: {tmp}/c.in already exists (remove it, or "
        "serve the existing FIFOs without --create)",
        files={"c.in": ""},
    ),
    "grpc-missing-directory": Case(
        ["serve", "--grpc", "unix:{tmp}/no/such/m.sock", "--policy", "zeros"],
        USAGE,
        "mlbridge serve: error: cannot bind 'unix:{tmp}/no/such/m.sock': directory "
        "'{tmp}/no/such' does not exist",
    ),
    "grpc-regular-file": Case(
        ["serve", "--grpc", "unix:{tmp}/precious.txt", "--policy", "zeros"],
        USAGE,
        "mlbridge serve: error: cannot bind 'unix:{tmp}/precious.txt': '{tmp}/precious.txt' "
        "exists and is not a socket (remove it or choose another path)",
        files={"precious.txt": "keep me"},
    ),
    "grpc-tls-half": Case(
        ["serve", "--grpc", "unix:{tmp}/m.sock", "--policy", "zeros", "--tls-cert", "c.pem"],
        USAGE,
        "mlbridge serve: error: TLS needs both --tls-cert and --tls-key",
    ),
    "grpc-module-missing": Case(
        ["serve", "--grpc", "unix:{tmp}/m.sock", "--policy", "zeros"],
        ENVIRONMENT,
        "mlbridge serve: error: a Python module is missing: No module named 'grpc' (is "
        "mlbridge fully installed, with the extra this command needs?)",
        files={"hide/grpc/__init__.py": HIDDEN_GRPC},
        env={"PYTHONPATH": "{tmp}/hide"},
    ),
    "onnxruntime-missing": Case(
        ["serve", "--pipe", "{tmp}/c", "--create", "--policy", "m.onnx"],
        ENVIRONMENT,
        "mlbridge serve: error: serving the ONNX model m.onnx needs the onnxruntime Python "
        "package, which is not installed",
        files={"hide/sitecustomize.py": hide("onnxruntime")},
        env={"PYTHONPATH": "{tmp}/hide"},
    ),
    "aot-onnx-missing": Case(
        ["mlbridge-aot", "m.onnx", "-o", "{tmp}/gen"],
        ENVIRONMENT,
        "mlbridge-aot: error: reading ONNX models needs the onnx Python package, which is not "
        "installed",
        files={"hide/sitecustomize.py": hide("onnx")},
        env={"PYTHONPATH": "{tmp}/hide"},
    ),
    "drive-without-server": Case(
        [
            "drive",
            "--grpc",
            "unix:{tmp}/nonexistent",
            "--policy",
            "zeros",
            "--connect-timeout",
            "1",
        ],
        FAILURE,
        "mlbridge drive: error: no compiler server answered at unix:{tmp}/nonexistent within "
        "1 s (--connect-timeout): is the compiler running and serving "
        "mlbridge.v1.CompilerService there?",
    ),
    "log-dump-not-a-log": Case(
        ["log", "dump", "f.c"],
        FAILURE,
        "mlbridge log dump: error: f.c is not a valid training log: training log, line 1: "
        "bad header line b'static int sq(int x) { return x * x; }\\n': invalid JSON: "
        "Expecting value: line 1 column 1 (char 0)",
    ),
    "log-dump-missing-file": Case(
        ["log", "dump", "missing.log"],
        FAILURE,
        "mlbridge log dump: error: missing.log: No such file or directory",
    ),
    "llvm-log-unwritable": Case(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "default",
            "--log",
            "{tmp}/no/log",
            "--",
            "clang-19",
            "-Oz",
            "-c",
            "f.c",
        ],
        FAILURE,
        "mlbridge llvm: error: --log {tmp}/no/log: cannot write: No such file or directory",
    ),
    "loop-without-clang": Case(
        ["train", "inlining", "--method", "loop", "--out", "{tmp}/out"],
        ENVIRONMENT,
        "mlbridge train: error: clang-19 is not installed (scripts/setup installs it)",
        env={"PATH": "{tmp}/empty"},
    ),
    "loop-plugin-missing": Case(
        ["train", "inlining", "--method", "loop", "--tool", "{tmp}/none.so", "--out", "{tmp}/out"],
        ENVIRONMENT,
        "mlbridge train: error: the plugin {tmp}/none.so does not exist (scripts/setup "
        "builds it, or give --tool)",
    ),
    "loop-corpus-missing": Case(
        ["train", "inlining", "--method", "loop", "--corpus", "{tmp}/none", "--out", "{tmp}/out"],
        USAGE,
        "mlbridge train: error: --corpus {tmp}/none: no such file or directory",
    ),
    "aot-no-model": Case(
        ["mlbridge-aot"],
        USAGE,
        "mlbridge-aot: error: the model is required (see 'mlbridge-aot --help')",
    ),
    "aot-model-missing": Case(
        ["mlbridge-aot", "missing.onnx", "-o", "{tmp}/gen"],
        FAILURE,
        "mlbridge-aot: error: missing.onnx: cannot read: No such file or directory",
    ),
    "aot-not-onnx": Case(
        ["mlbridge-aot", "g.onnx", "-o", "{tmp}/gen"],
        FAILURE,
        "mlbridge-aot: error: 'g.onnx' is not an ONNX model: ...",
        files={"g.onnx": "garbage"},
    ),
    "aot-bad-bytes": Case(
        ["mlbridge-aot", "m.onnx", "--max-memory", "lots"],
        USAGE,
        "mlbridge-aot: error: argument --max-memory: expected a number of bytes, got 'lots' "
        "(see 'mlbridge-aot --help')",
    ),
}


def _prepare(tmp_path: Path, files: Optional[Dict[str, str]]) -> None:
    (tmp_path / "f.c").write_text(SOURCE)
    (tmp_path / "empty").mkdir()
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


def _fill(text: str, tmp_path: Path) -> str:
    return text.replace("{tmp}", str(tmp_path))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.slow
def test_bad_input(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    if "clang-19" in case.args and not HAS_CLANG:
        pytest.skip("clang-19 not installed")
    _prepare(tmp_path, case.files)
    env = {k: _fill(v, tmp_path) for k, v in (case.env or {}).items()}
    args = [_fill(a, tmp_path) for a in case.args] or ["mlbridge"]
    done = run(args, cwd=tmp_path, env=env)
    assert_one_line(done, case.code, _fill(case.line, tmp_path))
    assert not list(tmp_path.glob("*.tmp"))
    if name == "grpc-regular-file":
        assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_grpc_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(["serve", "--grpc", f"127.0.0.1:{port}", "--policy", "zeros"])
    assert_one_line(
        done,
        USAGE,
        f"mlbridge serve: error: cannot bind '127.0.0.1:{port}': "
        "Address already in use (another server uses the port)",
    )


def test_drive_against_a_model_server(tmp_path: Path) -> None:
    """``drive`` dialling a ModelService (not a compiler): the gRPC status, one line."""
    pytest.importorskip("grpc")
    from mlbridge.grpc_server import start_server
    from mlbridge.policies import Zeros

    running = start_server(Zeros(), f"unix:{tmp_path}/m.sock")
    try:
        done = run(["drive", "--grpc", running.target, "--policy", "zeros"])
    finally:
        running.stop(0)
    assert_one_line(
        done,
        FAILURE,
        f"mlbridge drive: error: the session with the compiler at "
        f"{running.target} failed: UNIMPLEMENTED: Method not found!",
    )


@pytest.mark.parametrize(
    "prog, text",
    [
        ("mlbridge", f"mlbridge {__version__}"),
        ("mlbridge-aot", f"mlbridge-aot (mlbridge) {__version__}"),
    ],
)
def test_version(prog: str, text: str) -> None:
    done = run([prog, "--version"])
    assert done.returncode == OK and done.stdout == text + "\n" and done.stderr == ""


# -- mlbridge-aot -o ------------------------------------------------------------------


@pytest.fixture
def model(tmp_path: Path) -> Path:
    pytest.importorskip("onnx")
    from test_aot import relu_model, save

    return save(relu_model(), tmp_path / "m.onnx")


def test_aot_output_is_proc(model: Path) -> None:
    assert_one_line(
        run(["mlbridge-aot", str(model), "-o", "/proc/x"]),
        FAILURE,
        "mlbridge-aot: error: cannot write /proc/x: No such file or directory (-o /proc/x)",
    )


def test_aot_output_is_a_file(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("")
    assert_one_line(
        run(["mlbridge-aot", str(model), "-o", str(out)]),
        FAILURE,
        f"mlbridge-aot: error: -o {out}: exists and is not a directory",
    )
    assert_one_line(
        run(["mlbridge-aot", str(model), "-o", f"{out}/sub"]),
        FAILURE,
        f"mlbridge-aot: error: cannot write {out}/sub: Not a directory (-o {out}/sub)",
    )


# -- mlbridge llvm: policy failures, nothing asked, interrupts -------------------------


@needs_clang
@pytest.mark.parametrize("output", [None, "out/f.o"])
def test_raising_policy_exits_3_and_leaves_no_temporary_file(
    tmp_path: Path, output: Optional[str]
) -> None:
    _prepare(tmp_path, {"bad.py": RAISING_POLICY})
    (tmp_path / "out").mkdir()
    extra = ["-o", output] if output else []
    done = run(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "bad.py:decide",
            "--",
            "clang-19",
            "-Oz",
            "-c",
            "f.c",
            *extra,
        ],
        cwd=tmp_path,
    )
    assert_one_line(done, POLICY_FAILED, INLINE_POLICY_FAILED)
    left = sorted(p.name for p in [*tmp_path.iterdir(), *(tmp_path / "out").iterdir()])
    assert left == ["bad.py", "empty", "f.c", "out"]


@needs_clang
def test_unusable_answer_is_a_policy_failure(tmp_path: Path) -> None:
    """An answer the advisor's guard refuses is the policy's failure too (exit 3)."""
    _prepare(tmp_path, {"p.py": "def decide(features):\n    return 'high'\n"})
    subprocess.run(
        ["clang-19", "-O1", "-S", "-emit-llvm", "f.c", "-o", "f.ll"], cwd=tmp_path, check=True
    )
    done = run(
        [
            "llvm",
            "--problem",
            "regalloc-priority",
            "--policy",
            "p.py:decide",
            "--",
            "llc-19",
            "-O2",
            "f.ll",
            "-o",
            "f.s",
        ],
        cwd=tmp_path,
    )
    assert_one_line(
        done,
        POLICY_FAILED,
        "mlbridge llvm: error: the regalloc-priority policy failed on observation 0 of context ...",
    )
    assert done.stderr.rstrip().endswith(
        "AdvisorError: priority must be a number, got 'high' (the compiler was stopped)"
    ), done.stderr
    assert not (tmp_path / "f.s").exists()


@needs_clang
def test_no_inlining_decision_warns(tmp_path: Path) -> None:
    _prepare(tmp_path, None)
    done = run(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "default",
            "--",
            "clang-19",
            "-O0",
            "-c",
            "f.c",
        ],
        cwd=tmp_path,
    )
    assert_one_line(
        done,
        OK,
        "mlbridge llvm: warning: the compiler asked no inlining "
        "decision (is the optimisation level -O0, or the ML inliner not enabled?)",
    )
    assert (tmp_path / "f.o").exists()


@needs_clang
def test_evict_run_asking_nothing_warns(tmp_path: Path) -> None:
    _prepare(tmp_path, None)
    subprocess.run(
        ["clang-19", "-O0", "-S", "-emit-llvm", "f.c", "-o", "f.ll"], cwd=tmp_path, check=True
    )
    done = run(
        [
            "llvm",
            "--problem",
            "regalloc-eviction",
            "--policy",
            "default",
            "--",
            "llc-19",
            "-O0",
            "f.ll",
            "-o",
            "f.s",
        ],
        cwd=tmp_path,
    )
    assert_one_line(
        done,
        OK,
        "mlbridge llvm: warning: the compiler asked no eviction "
        "decision (is the optimisation level -O0, or did register allocation "
        "never need to evict?)",
    )


@needs_clang
def test_compiler_failure_is_passed_through(tmp_path: Path) -> None:
    _prepare(tmp_path, None)
    done = run(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "default",
            "--",
            "clang-19",
            "-Oz",
            "-c",
            "missing.c",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "mlbridge" not in done.stderr and "Traceback" not in done.stderr
    assert "clang-19: error: no such file or directory: 'missing.c'" in done.stderr


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@needs_clang
@pytest.mark.parametrize("when", ["deciding", "starting"])
@pytest.mark.parametrize(
    "signum, code", [(signal.SIGINT, INTERRUPTED), (signal.SIGTERM, TERMINATED)]
)
@pytest.mark.slow
def test_interrupted_compilation_is_stopped_cleanly(
    tmp_path: Path, signum: int, code: int, when: str
) -> None:
    """Ctrl-C (or SIGTERM) while the policy decides, or as soon as the
    compiler runs (its output file exists: mlbridge may still be starting its
    serving threads): the compiler is stopped, its temporary output removed,
    no line at all, exit 130 (143)."""
    _prepare(tmp_path, {"slow.py": SLOW_POLICY})
    deciding = tmp_path.parent / f"{tmp_path.name}.deciding"
    proc = subprocess.Popen(
        command("mlbridge")
        + [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "slow.py:decide",
            "--",
            "clang-19",
            "-Oz",
            "-c",
            "f.c",
        ],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DECIDING": str(deciding)},
        # As from a terminal: a shell starts background jobs (`cmd &`) with
        # SIGINT ignored, and Python keeps an ignored SIGINT ignored.
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        ready = (
            (lambda: deciding.exists())
            if when == "deciding"
            else (lambda: bool(list(tmp_path.glob("f-*.o.tmp"))))
        )
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01 if when == "starting" else 0.05)
        assert ready()
        start = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        assert time.monotonic() - start < 10  # not waiting for the sleeping policy
        assert proc.returncode == code and err == ""
        assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "f.c", "slow.py"]
    finally:
        if proc.poll() is None:  # a failure must leave nothing behind:
            proc.terminate()  # SIGTERM stops the compiler too (SIGKILL would not)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- mlbridge serve --pipe: a policy that raises ----------------------------------------


def _fake_compiler(base: Path, replies: List[bytes]) -> None:
    """LLVM's side of an mlgo session: one header, one observation."""
    deadline = time.monotonic() + 30
    while not Path(f"{base}.out").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    header = (
        b'{"features":[{"name":"x","type":"int64_t","port":0,"shape":[1]}],'
        b'"advice":{"name":"y","type":"int64_t","port":0,"shape":[1]}}\n'
    )
    with (
        open(f"{base}.in", "rb", buffering=0) as inp,
        open(f"{base}.out", "wb", buffering=0) as out,
    ):
        out.write(
            header + b'{"context":"c"}\n{"observation":0}\n' + (5).to_bytes(8, "little") + b"\n"
        )
        replies.append(inp.read(8))


def test_serve_pipe_policy_raising_exits_3(tmp_path: Path) -> None:
    _prepare(tmp_path, {"bad.py": RAISING_POLICY})
    base = tmp_path / "chan"
    replies: List[bytes] = []
    fake = threading.Thread(target=_fake_compiler, args=(base, replies), daemon=True)
    fake.start()
    done = run(
        ["serve", "--pipe", str(base), "--create", "--policy", "bad.py:decide", "--timeout", "30"],
        cwd=tmp_path,
    )
    fake.join(30)
    assert_one_line(
        done,
        POLICY_FAILED,
        "mlbridge serve: error: the policy failed: policy "
        "failed on observation 0 of context 'c': RuntimeError: boom from the "
        "policy (the session was ended)",
    )
    assert replies == [b""] and not list(tmp_path.glob("chan*"))


# -- mlbridge.cli_errors.run_command --------------------------------------------------


def _raises(err: BaseException) -> Callable[[], int]:
    def fn() -> int:
        raise err

    return fn


@pytest.mark.parametrize(
    "err, code, line",
    [
        (
            cli_errors.CommandError("it failed", POLICY_FAILED),
            POLICY_FAILED,
            "prog: error: it failed",
        ),
        (
            ModuleNotFoundError("No module named 'grpc'", name="grpc"),
            ENVIRONMENT,
            "prog: error: a Python module is missing: No module named 'grpc' (is mlbridge fully "
            "installed, with the extra this command needs?)",
        ),
        (
            FileNotFoundError(2, "No such file or directory", "x.log"),
            FAILURE,
            "prog: error: x.log: No such file or directory",
        ),
        (
            RuntimeError("oops\nsecond line\x01"),
            INTERNAL,
            "prog: error: internal error: RuntimeError: oops\\u000asecond line\\u0001 (a bug in "
            "mlbridge: please report it; MLBRIDGE_DEBUG=1 shows the traceback)",
        ),
        (KeyboardInterrupt(), INTERRUPTED, None),
    ],
)
def test_run_command_maps_exceptions(
    capsys, monkeypatch, err: BaseException, code: int, line: Optional[str]
) -> None:
    monkeypatch.delenv(cli_errors.DEBUG_VARIABLE, raising=False)
    assert run_command("prog", _raises(err)) == code
    captured = capsys.readouterr()
    assert captured.err == ("" if line is None else line + "\n")


def test_debug_prints_the_traceback_first(capsys, monkeypatch) -> None:
    monkeypatch.setenv(cli_errors.DEBUG_VARIABLE, "1")
    assert run_command("prog", _raises(RuntimeError("oops"))) == INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.splitlines()[-1].startswith(
        "prog: error: internal error: RuntimeError: oops"
    )


def test_thread_exceptions_are_one_line(capsys, monkeypatch) -> None:
    monkeypatch.delenv(cli_errors.DEBUG_VARIABLE, raising=False)

    def fn() -> int:
        thread = threading.Thread(target=_raises(ValueError("in a thread")), name="worker")
        thread.start()
        thread.join()
        return OK

    assert run_command("prog", fn) == OK
    assert capsys.readouterr().err == (
        "prog: error: in worker: internal error: ValueError: "
        "in a thread (a bug in mlbridge: please report it; "
        "MLBRIDGE_DEBUG=1 shows the traceback)\n"
    )

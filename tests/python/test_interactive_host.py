"""mlbridge-interactive-host (tools/interactive_host): stock llc-19's
eviction advisor answered by an mlbridge runner in C++. Its allocation is
the Python host's for the same model, AOT and ONNX Runtime agree; a
compiler that asks nothing is fine; a bad runner, an illegal answer, a
header beyond the budget and a hung compiler stop the compiler and say why;
usage errors exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from eviction_policy import untrained_eviction_policy
from process_checks import children, gone, wait_for

pytest.importorskip("onnx")
if shutil.which("llc-19") is None or shutil.which("clang-19") is None:
    pytest.skip("needs llc-19 and clang-19", allow_module_level=True)

from mlbridge.native import NativeError, interactive_host_path  # noqa: E402
from mlbridge.run_stats import read_run_stats  # noqa: E402

PRESSURE = Path(__file__).resolve().parents[1] / "data" / "regalloc_pressure.c"


@pytest.fixture(scope="module")
def host():
    try:
        return interactive_host_path()
    except NativeError as err:
        pytest.skip(f"no mlbridge-interactive-host: {err}")


@pytest.fixture(scope="module")
def bitcode(tmp_path_factory):
    out = tmp_path_factory.mktemp("host") / "p.bc"
    subprocess.run(
        ["clang-19", "-O2", "-emit-llvm", "-c", str(PRESSURE), "-o", str(out)], check=True
    )
    return out


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    """An untrained eviction policy as the export writes it."""
    return untrained_eviction_policy(tmp_path_factory.mktemp("policy") / "policy.onnx")


def _run(host, runner, command, stats=None, *extra, timeout=120):
    args = [str(host), "--runner", runner, "--problem", "regalloc-eviction", *extra]
    if stats is not None:
        args += ["--stats", str(stats)]
    return subprocess.run([*args, "--", *command], capture_output=True, text=True, timeout=timeout)


def _llc(bitcode, out, *flags):
    return ["llc-19", "-O2", *flags, "-stop-after=virtregrewriter", str(bitcode), "-o", str(out)]


@pytest.mark.slow
def test_the_c_plus_plus_host_allocates_as_the_python_host(host, bitcode, policy, tmp_path):
    from mlbridge.aot.loadable import build_aot_module
    from mlbridge.llvm.driver import run_compiler
    from mlbridge.onnx_policy import OnnxPolicy

    class Finite:  # what the environment observes and the host feeds
        def __init__(self):
            self.policy = OnnxPolicy(str(policy))

        def __call__(self, features):
            import numpy as np

            return self.policy({k: np.nan_to_num(v) for k, v in features.items()})

    python = run_compiler(
        _llc(bitcode, tmp_path / "py.mir"),
        {"regalloc-eviction": Finite()},
        timeout=120,
        channel_dir=str(tmp_path),
        stdout=subprocess.DEVNULL,
    )
    assert python.ok and python.decisions > 10
    aot = build_aot_module(policy, tmp_path / "aot", class_name="HostTestPolicy")
    for runner in (f"onnx:{policy}", f"aot:{aot}"):
        kind = runner.split(":")[0]
        stats = tmp_path / f"{kind}.jsonl"
        done = _run(
            host,
            runner,
            _llc(bitcode, tmp_path / f"{kind}.mir"),
            stats,
            "--finite",
            "--mask",
            "mask",
        )
        assert done.returncode == 0, done.stderr
        (report,) = read_run_stats(stats)
        assert report.tool == "interactive-host" and report.runner == runner
        assert report.decisions == report.answered == python.decisions
        assert report.fallbacks == 0 and report.first_error is None
        assert (
            report.details["problem"] == "regalloc-eviction"
            and report.details["compiler_status"] == 0
        )
        assert report.details["evaluate_seconds"] > 0  # type: ignore[operator]
        assert (tmp_path / f"{kind}.mir").read_bytes() == (tmp_path / "py.mir").read_bytes()


def test_a_compiler_that_asks_nothing_is_served_nothing(host, bitcode, policy, tmp_path):
    stats = tmp_path / "s.jsonl"
    done = _run(host, f"onnx:{policy}", ["llc-19", "-O0", str(bitcode), "-o", "/dev/null"], stats)
    assert done.returncode == 0, done.stderr
    assert read_run_stats(stats)[0].decisions == 0


def test_clang_is_served_for_every_source_and_its_link_asks_nothing(host, policy, tmp_path):
    """One session per cc1 of a clang command (two sources: two sessions),
    the statistics file named by $MLBRIDGE_HOST_STATS; linking asks nothing."""
    import os

    sources = []
    for name in ("a", "b"):
        sources.append(tmp_path / f"{name}.c")
        shutil.copyfile(PRESSURE, sources[-1])
    env = dict(os.environ)

    def clang(stats, *args):
        env["MLBRIDGE_HOST_STATS"] = str(stats)
        command = ["clang-19", "-O2", "-w", *args]
        args = [str(host), "--runner", f"onnx:{policy}", "--problem", "regalloc-eviction"]
        done = subprocess.run(
            [*args, "--finite", "--mask", "mask", "--", *command],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        (record,) = read_run_stats(stats)
        assert record.first_error is None and record.details["compiler_status"] == 0
        return record.decisions

    one = clang(tmp_path / "one.jsonl", "-c", str(sources[0]), "-o", "a.o")
    assert one > 10
    assert clang(tmp_path / "two.jsonl", "-c", *map(str, sources)) == 2 * one
    assert clang(tmp_path / "link.jsonl", "-shared", "a.o", "-o", "liba.so") == 0
    assert (tmp_path / "liba.so").is_file()


def test_an_illegal_answer_stops_the_compiler(host, bitcode, tmp_path):
    stats = tmp_path / "s.jsonl"
    done = _run(host, "constant:5", _llc(bitcode, tmp_path / "x.mir"), stats, "--mask", "mask")
    assert done.returncode == 1
    assert "not a legal index of mask" in done.stderr and "the compiler was stopped" in done.stderr
    (report,) = read_run_stats(stats)
    assert report.details["compiler_status"] == 128 + 15  # SIGTERM, before the FIFOs closed
    assert report.first_error is not None and "not a legal index" in report.first_error
    assert children() == []


def test_a_runner_that_cannot_be_made_stops_the_compiler(host, bitcode, tmp_path):
    done = _run(host, f"onnx:{tmp_path / 'missing.onnx'}", _llc(bitcode, tmp_path / "x.mir"))
    assert done.returncode == 1 and "creating the runner" in done.stderr
    assert not (tmp_path / "x.mir").exists()


#: A compiler speaking LLVM's interactive protocol that sends one header
#: (argv[1], JSON) and then waits to be stopped; it writes its pid to argv[2].
HOSTILE_COMPILER = """
import os, sys, time
header, pid_file = sys.argv[1], sys.argv[2]
base = next(a.split("=", 1)[1] for a in sys.argv if "-interactive-channel-base=" in a)
with open(pid_file, "w") as f:
    f.write(str(os.getpid()))
out = open(base + ".out", "wb", buffering=0)  # LLVM opens its outbound FIFO first
inbound = open(base + ".in", "rb", buffering=0)
out.write(header.encode() + b"\\n")
time.sleep(60)
"""

#: An `aot:` module of the ABI (mlbridge/AotAbi.h) answering 0 to 33 mask
#: features: the AOT runner allocates the buffers of the specs it is given.
TINY_MODULE = """
#include "mlbridge/AotAbi.h"
static const int64_t mask_shape[] = {33}, advice_shape[] = {1};
static const mlbridge_aot_tensor_v1 args[] = {{"mask", "int64_t", 1, mask_shape}};
static const mlbridge_aot_tensor_v1 results[] = {
    {"index_to_evict", "int64_t", 1, advice_shape}};
static int64_t *advice;
static void *create(void) { static char object; return &object; }
static void destroy(void *m) { (void)m; }
static void *no_data(void *m, int i) { (void)m, (void)i; return 0; }
static void set_arg(void *m, int i, void *d) { (void)m, (void)i, (void)d; }
static void set_result(void *m, int i, void *d) { (void)m, (void)i; advice = d; }
static const char *run(void *m) { (void)m; *advice = 0; return 0; }
static const mlbridge_aot_model_v1 model = {
    1, "Tiny", 1, 1, args, results, create, destroy,
    no_data, no_data, set_arg, set_result, run};
const mlbridge_aot_model_v1 *mlbridge_aot_model_v1_entry(void) { return &model; }
"""

#: Starts the host (argv[3:]) under an address-space limit (argv[1], 0: none)
#: and writes its peak RSS in KiB to argv[2]; exits with the host's status.
LAUNCHER = """
import os, resource, subprocess, sys
limit, peak, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def cap():
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
child = subprocess.Popen(args, preexec_fn=cap)
_, status, usage = os.wait4(child.pid, 0)
open(peak, "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""

#: The host's address space in the next test: far below the 4 GiB the
#: hostile header asks for (ASan's shadow memory needs more: not limited).
ADDRESS_SPACE = 1 << 30


@pytest.fixture(scope="module")
def tiny_module(tmp_path_factory):
    out = tmp_path_factory.mktemp("module")
    (out / "tiny.c").write_text(TINY_MODULE)
    include = Path(__file__).resolve().parents[2] / "include"
    subprocess.run(
        ["clang-19", "-shared", "-fPIC", "-I", str(include), str(out / "tiny.c")]
        + ["-o", str(out / "tiny.so")],
        check=True,
    )
    return out / "tiny.so"


@pytest.mark.parametrize("advice", [[1 << 29], [(1 << 23) + 1]])  # int64: 4 GiB, 64 MiB + 8
def test_an_advice_beyond_the_budget_stops_the_compiler_before_any_allocation(
    host, tiny_module, tmp_path, advice
):
    header = {
        "features": [{"name": "mask", "type": "int64_t", "port": 0, "shape": [33]}],
        "advice": {"name": "index_to_evict", "type": "int64_t", "port": 0, "shape": advice},
    }
    script, pid_file, stats = tmp_path / "llc.py", tmp_path / "pid", tmp_path / "s.jsonl"
    script.write_text(HOSTILE_COMPILER)
    command = [sys.executable, str(script), json.dumps(header), str(pid_file)]
    sanitized = b"__asan_init" in Path(host).read_bytes()

    args = [str(host), "--runner", f"aot:{tiny_module}", "--problem", "regalloc-eviction"]
    args += ["--stats", str(stats), "--timeout-ms", "30000", "--", *command]
    peak = tmp_path / "peak"
    # The host is started by a fresh launcher, not forked from pytest: Linux
    # keeps a process's peak RSS across exec, so a child forked from a large
    # test process would report that process's size as its own.
    launcher = [sys.executable, "-c", LAUNCHER, str(0 if sanitized else ADDRESS_SPACE), str(peak)]
    start = time.monotonic()
    with open(tmp_path / "stderr", "w") as err:
        proc = subprocess.Popen(launcher + args, stderr=err)
    try:
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    stderr = (tmp_path / "stderr").read_text()
    assert proc.returncode == 1, stderr
    # refused at once, naming the tensor and the budget (no question awaited)
    assert "LLVM's advice 'index_to_evict'" in stderr, stderr
    assert "budget of 67108864 bytes" in stderr, stderr
    assert "the compiler was stopped" in stderr
    assert time.monotonic() - start < 20
    (report,) = read_run_stats(stats)
    assert report.details["compiler_status"] == 128 + 15  # SIGTERM, before the FIFOs closed
    assert report.decisions == 0 and report.first_error and "budget" in report.first_error
    assert wait_for(lambda: gone(int(pid_file.read_text())), 10)
    # nothing of the declared size was allocated (peak RSS in KiB)
    assert int(peak.read_text()) < 256 * 1024, peak.read_text()
    assert children() == []


@pytest.mark.slow
def test_the_tiny_module_answers_a_header_within_the_budget(host, tiny_module, tmp_path):
    header = {
        "features": [{"name": "mask", "type": "int64_t", "port": 0, "shape": [33]}],
        "advice": {"name": "index_to_evict", "type": "int64_t", "port": 0, "shape": [1]},
    }
    script, pid_file = tmp_path / "llc.py", tmp_path / "pid"
    script.write_text(HOSTILE_COMPILER)
    command = [sys.executable, str(script), json.dumps(header), str(pid_file)]
    # the runner is made, then the compiler asks nothing within the timeout
    done = _run(host, f"aot:{tiny_module}", command, None, "--timeout-ms", "1000")
    assert done.returncode == 1 and "waiting for the compiler's next question" in done.stderr
    assert "budget" not in done.stderr


def test_a_compiler_that_never_opens_its_channel_times_out(host, tmp_path):
    start = time.monotonic()
    # the advisor's flags land in sh's positional parameters: never read
    done = _run(host, "constant:0", ["sh", "-c", "sleep 30", "sh"], None, "--timeout-ms", "500")
    assert done.returncode == 1 and "did not open its channel" in done.stderr
    assert time.monotonic() - start < 10


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "required"),
        (["--runner", "constant:0", "--problem", "spill", "--", "llc-19"], "--problem"),
        (["--runner", "nonsense", "--problem", "regalloc-eviction", "--", "llc-19"], "--runner"),
        (
            [
                "--runner",
                "constant:0",
                "--problem",
                "regalloc-eviction",
                "--timeout-ms",
                "0",
                "--",
                "x",
            ],
            "timeout",
        ),
        (["--bogus"], "unknown option"),
    ],
)
def test_usage_errors_exit_2(host, args, message):
    done = subprocess.run([str(host), *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and message in done.stderr

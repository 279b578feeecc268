"""End-to-end checks of mlbridge-phase-service (run by ctest, which passes the
program's path): its description, usage errors, the training protocol served
by the Python pipe host (extended protocol, bitstream and json), a peer that
fails, leaves or never comes (exit 1, never a hang), and deployment with
in-process runners (constant, a missing ONNX model falling back to
default<Oz>).

Usage: python phase_service_check.py PATH/TO/mlbridge-phase-service-llvmN
(with MLBRIDGE_LLVM_MAJOR=N, which ctest sets: the clang/opt of that major)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from mlbridge.channel import make_fifos
from mlbridge.llvm.versions import LlvmTools
from mlbridge.pipe_host import PipeHost
from mlbridge.run_stats import read_run_stats

#: The tools of the LLVM major the service was built on.
TOOLS = LlvmTools(int(os.environ.get("MLBRIDGE_LLVM_MAJOR", "19")))

MODULE = Path(__file__).resolve().parents[1] / "data" / "phase_sum.ll"

TIMEOUT = 120  # seconds for any one run of the service (sanitizer builds are slow)


def run(service: str, *args: str, expect: int) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [service, *args], capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL
    )
    assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
    return done


def describe(service: str) -> Dict[str, Any]:
    info = json.loads(run(service, "--list-actions", expect=0).stdout)
    assert len(info["features"]) == 56 and info["features"][0] == "BBNumArgsHi"
    assert [s["name"] for s in info["inputs"]] == [
        "autophase",
        "instcount",
        "initial_instcount",
        "baseline_instcount",
        "status",
        "module",
        "steps",
    ]
    assert [s["name"] for s in info["outputs"]] == ["command", "argument"]
    assert [s["name"] for s in info["deploy_outputs"]] == ["action"]
    names = [a["name"] for a in info["actions"]]
    assert len(set(names)) == len(names) >= 40
    assert names[info["default_action"]] == "default<Oz>"
    return info


def check_usage(service: str, module: Path) -> None:
    for args in (
        [],
        ["--bogus"],
        ["--runner"],
        ["--runner", "constant:0"],
        ["--runner", "nonsense:1", "--module", str(module), "-o", "x.bc"],
        ["--runner", "constant:0", "--module", str(module)],
        ["--runner", "constant:0", "--module", "a", "--modules", "b", "-o", "c"],
        ["--runner", "constant:0", "--module", str(module), "-o", "x", "--max-steps", "x"],
        ["--runner", "constant:0", "--modules", "l", "--max-steps", "3"],
        ["--runner", "constant:0", "--modules", "l", "--stats", "s.jsonl"],
        ["--list-actions", "--runner", "constant:0"],
        ["--pipeline", "default<Oz>", "--module", str(module), "-o", "x", "--no-baseline"],
        ["--runner", "constant:0", "--modules", "l", "--no-baseline"],
        ["--runner", "constant:0", "--module", str(module), "-o", "x", "--no-baseline=1"],
    ):
        done = run(service, *args, expect=2)
        assert done.stderr.startswith("mlbridge-phase-service: error: "), done.stderr
        assert done.stdout == ""
    assert run(service, "--help", expect=0).stdout.startswith("usage:")


class Scripted:
    """A policy answering (command, argument) pairs in turn, recording what it saw."""

    def __init__(self, script: List[Tuple[int, int]]) -> None:
        self.script = list(script)
        self.seen: List[Tuple[Dict[str, Any], str]] = []

    def __call__(self, features: Dict[str, Any], context: str = "") -> Dict[str, int]:
        self.seen.append(({k: v.copy() for k, v in features.items()}, context))
        command, argument = self.script.pop(0)
        return {"command": command, "argument": argument}


def serve(
    service: str, tmp: Path, policy: Any, fmt: str, extra: Tuple[str, ...]
) -> Tuple[subprocess.CompletedProcess, Optional[BaseException]]:
    """Runs the service in training mode against a PipeHost serving ``policy``."""
    base = str(tmp / f"channel-{fmt}")
    errors: List[BaseException] = []
    with make_fifos(base):
        host = PipeHost(policy, open_timeout=TIMEOUT, io_timeout=TIMEOUT)

        def host_thread() -> None:
            try:
                host.serve(base)
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        thread = threading.Thread(target=host_thread, daemon=True)
        thread.start()
        runner = f"pipe:{base},protocol=extended,format={fmt},timeout_ms=60000"
        done = subprocess.run(
            [service, "--runner", runner, *extra],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    return done, (errors[0] if errors else None)


def check_training(service: str, tmp: Path, info: Dict[str, Any], module: Path) -> None:
    index = {a["name"]: i for i, a in enumerate(info["actions"])}
    corrupt = tmp / "corrupt.bc"
    corrupt.write_bytes(b"BC\xc0\xde" + b"\x7f" * 64)
    listing = tmp / "modules.txt"
    # A C program as clang -Oz hands it to the optimiser, and what clang
    # -Oz's optimiser makes of it: the service's baseline must be clang's
    # instruction count (its default<Oz> is clang's, not opt's).
    source = Path(__file__).resolve().parents[2] / "python/mlbridge/corpus/bundled/hashtable.c"
    program, optimised = tmp / "hashtable.bc", tmp / "hashtable.oz.bc"
    subprocess.run([TOOLS.clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c",
                    str(source), "-o", str(program)], check=True)  # fmt: skip
    subprocess.run([TOOLS.clang, "-Oz", "-emit-llvm", "-c", str(program), "-o", str(optimised)],
                   check=True)  # fmt: skip
    listing.write_text(f"# the modules\n{module.name}\n\n{corrupt}\n{program}\n{optimised}\n")
    out = tmp / "written.bc"
    c = info["commands"]
    for fmt in ("bitstream", "json"):
        policy = Scripted(
            [
                (c["load"], 0),
                (c["apply"], index["sroa"]),
                (c["snapshot"], 0),
                (c["apply"], index["instcombine"]),
                (c["apply"], len(info["actions"])),  # no such action
                (c["restore"], 0),
                (c["load"], 1),  # corrupt
                (c["write"], 0),
                (c["load"], 2),
                (c["load"], 3),
                (c["end"], 0),
            ]
        )
        done, error = serve(service, tmp, policy, fmt, ("--modules", str(listing), "-o", str(out)))
        assert error is None, error
        assert done.returncode == 0, (done.returncode, done.stderr)
        seen = policy.seen
        assert len(seen) == 11
        first, context = seen[0]
        assert first["module"][0] == -1 and first["status"][0] == 0 and context == ""
        assert not first["autophase"].any()
        loaded, context = seen[1]
        assert context == str(module) and loaded["module"][0] == 0
        assert loaded["instcount"][0] == loaded["initial_instcount"][0] > 0
        assert 0 < loaded["baseline_instcount"][0] < loaded["initial_instcount"][0]
        assert loaded["autophase"][info["features"].index("TotalInsts")] == loaded["instcount"][0]
        assert seen[2][0]["instcount"][0] < loaded["instcount"][0]  # sroa
        assert seen[2][0]["steps"][0] == 1
        assert seen[5][0]["status"][0] == info["statuses"]["invalid_command"]
        assert "no action #" in seen[5][1]
        restored = seen[6][0]
        assert restored["status"][0] == 0 and restored["steps"][0] == 1
        assert restored["instcount"][0] == seen[2][0]["instcount"][0]
        failed, context = seen[7]
        assert failed["status"][0] == info["statuses"]["load_failed"]
        assert str(corrupt) in context and failed["module"][0] == 0
        assert seen[8][0]["status"][0] == 0 and out.stat().st_size > 0
        program_seen, optimised_seen = seen[9][0], seen[10][0]
        assert program_seen["module"][0] == 2 and optimised_seen["module"][0] == 3
        assert optimised_seen["initial_instcount"][0] == program_seen["baseline_instcount"][0]


def check_peer_failures(service: str, tmp: Path, module: Path) -> None:
    listing = tmp / "one.txt"
    listing.write_text(f"{module}\n")

    def failing(features: Dict[str, Any]) -> Dict[str, int]:
        raise RuntimeError("the policy broke")

    done, _ = serve(service, tmp, failing, "bitstream", ("--modules", str(listing)))
    assert done.returncode == 1 and "the policy broke" in done.stderr, done.stderr

    # The host goes away after two answers: EOF, exit 1.
    class Leaving(Scripted):
        def __call__(self, features: Dict[str, Any], context: str = "") -> Dict[str, int]:
            if len(self.seen) == 2:
                raise SystemExit  # ends the host thread, which closes its ends
            return super().__call__(features, context)

    leaving = Leaving([(1, 0), (2, 0), (2, 0)])
    done, _ = serve(service, tmp, leaving, "json", ("--modules", str(listing)))
    assert done.returncode == 1 and "error:" in done.stderr, done.stderr

    # Nobody ever opens the channel: the connect timeout, exit 1.
    base = str(tmp / "lonely")
    with make_fifos(base):
        start = time.monotonic()
        done = run(
            service,
            "--runner",
            f"pipe:{base},protocol=extended,timeout_ms=300",
            "--modules",
            str(listing),
            expect=1,
        )
        assert time.monotonic() - start < 60
        assert "timeout" in done.stderr, done.stderr


def check_deployment(service: str, tmp: Path, info: Dict[str, Any], module: Path) -> None:
    out = tmp / "out.bc"
    instcombine = [a["name"] for a in info["actions"]].index("instcombine")
    assert info["actions"][instcombine]["pipeline"].startswith("function(instcombine")
    stats = tmp / "stats.jsonl"
    run(service, "--runner", f"constant:{instcombine}", "--module", str(module), "-o", str(out),
        "--max-steps", "2", "--stats", str(stats), expect=0)  # fmt: skip
    assert out.read_bytes()[:4] == b"BC\xc0\xde"
    (record,) = read_run_stats(stats)
    assert (record.tool, record.decisions, record.answered, record.fallbacks) == (
        "phase-service",
        2,
        2,
        0,
    ), record
    assert record.first_error is None and record.details == {"failed_steps": 0}, record
    assert record.runner == f"constant:{instcombine}" and record.unit == str(module)
    done = run(service, "--runner", "constant:-1", "--module", str(module), "-o", str(out),
               expect=0)  # fmt: skip
    assert done.stderr == "" or "Suppressions used" in done.stderr, done.stderr
    missing = tmp / "missing.onnx"
    done = run(service, "--runner", f"onnx:{missing}", "--module", str(module), "-o", str(out),
               "--stats", str(stats), expect=0)  # fmt: skip
    assert "falling back to default<Oz>" in done.stderr, done.stderr
    second = read_run_stats(stats)[1]
    assert (second.decisions, second.answered, second.fallbacks) == (1, 0, 1), second
    assert second.first_error is not None and "missing.onnx" in second.first_error, second
    done = run(service, "--runner", "constant:0", "--module", str(tmp / "none.bc"), "-o",
               str(out), expect=1)  # fmt: skip
    assert "none.bc" in done.stderr
    done = run(service, "--runner", "constant:0", "--module", str(module), "-o",
               str(tmp / "no" / "dir.bc"), expect=1)  # fmt: skip
    assert "dir.bc" in done.stderr


def main() -> int:
    service = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="mlbridge-phase-") as name:
        tmp = Path(name)
        os.chmod(tmp, 0o700)
        text = tmp / "sum.ll"
        text.write_text(MODULE.read_text())
        module = tmp / "sum.bc"
        subprocess.run([TOOLS.tool("llvm-as"), str(text), "-o", str(module)], check=True)
        info = describe(service)
        check_usage(service, module)
        check_training(service, tmp, info, module)
        check_peer_failures(service, tmp, module)
        check_deployment(service, tmp, info, module)
    print("mlbridge-phase-service: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

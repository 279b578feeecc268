"""Run the demo: each bundled program compiled twice with clang-19 -Oz, once
with LLVM's own inliner and once with the demo policy served over pipes."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Optional, TextIO

from mlbridge.corpus.defaults import BUNDLED
from mlbridge.demo.policy import CountingPolicy
from mlbridge.errors import MlbridgeError
from mlbridge.llvm import INLINING, run_compiler, text_size
from mlbridge.session import run_tool

CLANG = "clang-19"
FLAGS = ("-Oz", "-c")


@dataclass
class DemoRow:
    """Results for one program."""

    program: str
    decisions: int
    inlined: int
    host_us_per_decision: float
    text_policy: int
    text_default: int


def sources() -> List[str]:
    """The bundled C programs (:data:`mlbridge.corpus.defaults.BUNDLED`)."""
    return sorted(str(p) for p in BUNDLED.glob("*.c") if p.is_file())


def _progress(out: TextIO, text: str) -> None:
    if out.isatty():
        out.write("\r\033[K" + text)
    else:
        out.write(text + "\n")
    out.flush()


def demo_program(source: str, workdir: str, records: Optional[list] = None) -> DemoRow:
    """Compile ``source`` with LLVM's inliner and with the demo policy."""
    name = os.path.basename(source)
    plain = os.path.join(workdir, name + ".default.o")
    served = os.path.join(workdir, name + ".policy.o")
    run_tool([CLANG, *FLAGS, source, "-o", plain], timeout=300, what=f"{CLANG} on {name}")
    policy = CountingPolicy()
    result = run_compiler([CLANG, *FLAGS, source, "-o", served], {INLINING: policy}, timeout=300)
    if not result.ok:
        raise MlbridgeError(f"{name}: {result.error or 'compiler failed'}\n{result.stderr}")
    if records is not None:
        records.extend(policy.records)
    return DemoRow(
        name,
        result.decisions,
        policy.inlined,
        result.host_seconds_per_decision * 1e6,
        text_size(served),
        text_size(plain),
    )


def format_table(rows: List[DemoRow]) -> str:
    """The demo's result table."""
    lines = [
        f"{'program':<14}{'decisions':>10}{'inlined':>9}{'host us/dec':>13}"
        f"{'.text policy':>14}{'.text -Oz':>11}{'change':>9}"
    ]
    for r in rows:
        change = (r.text_policy - r.text_default) / r.text_default * 100 if r.text_default else 0
        lines.append(
            f"{r.program:<14}{r.decisions:>10}{r.inlined:>9}"
            f"{r.host_us_per_decision:>13.1f}{r.text_policy:>14}"
            f"{r.text_default:>11}{change:>+8.1f}%"
        )
    return "\n".join(lines)


def run_demo(
    keep: Optional[str] = None, out: TextIO = sys.stdout, progress: TextIO = sys.stderr
) -> int:
    """Run the demo, print the table; 0 on success."""
    if shutil.which(CLANG) is None:
        raise MlbridgeError(f"{CLANG} is not on PATH (Debian: apt-get install clang-19)")
    workdir = keep or tempfile.mkdtemp(prefix="mlbridge-demo-")
    os.makedirs(workdir, exist_ok=True)
    try:
        rows = []
        records: list = []
        programs = sources()
        for i, source in enumerate(programs, 1):
            _progress(
                progress,
                f"[{i}/{len(programs)}] {os.path.basename(source)}: "
                f"compiling with LLVM's inliner and with the demo policy...",
            )
            rows.append(demo_program(source, workdir, records))
        _progress(progress, f"compiled {len(programs)} programs")
        if progress.isatty():
            progress.write("\n")
        out.write(format_table(rows) + "\n")
        out.write(
            "Inlining decisions by mlbridge/demo/policy.py over LLVM 19's "
            "interactive pipes; '.text -Oz' is plain clang-19 -Oz.\n\n"
        )
        from mlbridge.demo.deploy import run_deployment

        _progress(
            progress,
            f"deployment: replaying {len(records)} decisions in-process "
            f"(ONNX Runtime) and over pipes...",
        )
        if progress.isatty():
            progress.write("\n")
        return run_deployment(workdir, records, out)
    finally:
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)

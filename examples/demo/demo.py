"""mlbridge's demo, an example on the installed package's public API.

Each C program bundled with the package (``mlbridge.corpus.defaults.BUNDLED``)
is compiled twice with clang-19 -Oz: once with LLVM's own inliner, once with a
hand-written Python policy (demo_policy.py) making every inlining decision
over LLVM 19's interactive pipes. Then the deployment half
(demo_deploy.py): the same policy as an ONNX graph, replayed in-process by a
C++ program of the native half and over pipes to the Python policy.

    python examples/demo/demo.py [--keep DIR]

``scripts/setup`` runs it last. Exit status: 0, 1 when a compilation or the
deployment half failed, 4 without clang-19.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Optional, Sequence, TextIO

from demo_policy import CountingPolicy

from mlbridge.corpus.defaults import BUNDLED
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
            "Inlining decisions by examples/demo/demo_policy.py over LLVM 19's "
            "interactive pipes; '.text -Oz' is plain clang-19 -Oz.\n\n"
        )
        from demo_deploy import run_deployment

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


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--keep", help="keep the build files in this directory")
    args = parser.parse_args(argv)
    if shutil.which(CLANG) is None:
        print(f"demo: {CLANG} is not on PATH (Debian: apt-get install clang-19)", file=sys.stderr)
        return 4
    try:
        return run_demo(keep=args.keep)
    except MlbridgeError as err:  # a ToolError too
        print(f"demo: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

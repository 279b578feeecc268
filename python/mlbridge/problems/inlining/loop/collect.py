"""Step 1: collect (features, LLVM's decision) from stock clang through
LLVM's interactive mode (on LLVM 16, mlbridge's plugin and its pipe
runner): the compiler's own MLGO inline advisor sends every call site's
features over pipes to a Python policy that answers LLVM's default
decision, and the driver writes an LLVM training log."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Optional, Sequence

import numpy as np

from mlbridge.corpus.program import Program
from mlbridge.errors import MlbridgeError
from mlbridge.llvm import INLINING, run_compiler
from mlbridge.llvm.versions import LlvmTools, tools
from mlbridge.output_files import open_output_file
from mlbridge.policies import InlineDefault
from mlbridge.problems.inlining import DECISION, DEFAULT_FEATURE
from mlbridge.problems.inlining.imitation import Dataset
from mlbridge.problems.inlining.toolchain import OPT_LEVEL
from mlbridge.training_log import read_training_log


def collect_file(
    source: Path, flags: Sequence[str], log: Path, llvm: Optional[LlvmTools] = None
) -> int:
    """Compiles ``source`` with the clang of ``llvm`` (default:
    :func:`mlbridge.llvm.versions.tools`) and the default policy served over
    pipes, logging every decision to ``log``; returns the number of
    decisions. The object (and anything the compiler names after it) goes
    beside ``log``, in the work directory, and is removed."""
    llvm = llvm or tools()
    obj = log.with_suffix(".o")
    command = [llvm.clang, OPT_LEVEL, "-c", "-w", *flags, str(source), "-o", str(obj)]
    try:
        with open_output_file(log) as stream:
            result = run_compiler(
                command,
                {INLINING: InlineDefault()},
                logs={INLINING: stream},
                include_default=True,
                timeout=900,
                io_timeout=120,
                llvm=llvm.major,
                plugin=llvm.plugin,
            )
    finally:
        obj.unlink(missing_ok=True)
    if not result.ok:
        raise MlbridgeError(f"collecting from {source.name}: {result.error}")
    return result.decisions


def read_logs(logs: Sequence[Path], programs: Sequence[str]) -> Dataset:
    """The call sites of ``logs`` (one program name per log)."""
    names: Optional[List[str]] = None
    rows, decisions, origin = [], [], []
    for log, program in zip(logs, programs):
        with open(log, "rb") as stream:
            for record in read_training_log(stream):
                t = record.tensors
                if names is None:
                    names = [n for n in t if n not in (DEFAULT_FEATURE, DECISION)]
                rows.append([int(t[n].reshape(-1)[0]) for n in names])
                decisions.append(int(t[DEFAULT_FEATURE].reshape(-1)[0]))
                origin.append(program)
    if names is None:
        raise MlbridgeError("the training logs hold no decision")
    return Dataset(names, np.asarray(rows, np.int64), np.asarray(decisions, np.int64), origin)


def collect(
    programs: Sequence[Program],
    out_dir: Path,
    progress: Optional[Callable[[int, int, str], None]] = None,
    llvm: Optional[LlvmTools] = None,
) -> Dataset:
    """Collects from every source of ``programs`` into ``out_dir`` (with the
    clang of ``llvm``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = [(p, s) for p in programs for s in p.sources]
    logs = []
    for i, (program, source) in enumerate(jobs):
        if progress:
            progress(i, len(jobs), f"{program.name}/{source.name}")
        log = out_dir / f"{program.dirname}-{source.name}.log"
        collect_file(source, program.flags, log, llvm)
        logs.append(log)
    if progress:
        progress(len(jobs), len(jobs), "")
    return read_logs(logs, [p.name for p, _ in jobs])

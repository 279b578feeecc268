"""The differential check of runnable programs (csmith's, or any program
that prints what it computed and exits 0).

Each program is built twice, by a reference :class:`Build` (``clang-19
-O0``) and by a candidate (the policy deployed), each executable is run
under a deadline, and the two outputs (stdout and exit status) compared.
What can come of it (:attr:`ProgramCheck.status`):

- ``same``: both built, ran and printed the same;
- a finding (:data:`FINDINGS`), kept as a reproducer: ``mismatch`` (the
  outputs differ), ``candidate-build-failed``, ``candidate-crashed`` (it
  exited non-zero or by a signal where the reference exited 0),
  ``candidate-timed-out`` (the reference ended within the deadline, the
  candidate did not), ``fallback`` (the policy's plugin fell back to the
  compiler's heuristic, or wrote no statistics: the program was not built
  with the policy);
- a skip (:data:`SKIPS`), the program's fault, not the candidate's:
  ``reference-build-failed``, ``reference-failed`` (it exited non-zero),
  ``reference-timed-out`` (csmith's programs may loop for ever).

A reproducer is a directory of the findings directory named after the
program: its sources, and ``finding.json`` with both commands (argv lists),
the candidate's environment, both outputs and the status.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from mlbridge.child_process import child_environment
from mlbridge.corpus.program import Program
from mlbridge.program_runs import (
    FINDINGS,
    SKIPS,
    ProgramCheck,
    ProgramRun,
    compare_runs,
    error_detail,
    reference_skip,
    run_executable,
)
from mlbridge.session import ToolError, run_tool
from mlbridge.validation.build import Build, policy_decisions

__all__ = ["FINDINGS", "SKIPS", "ProgramCheck", "check_program", "check_programs"]

#: The largest statistics file read per build.
_MAX_STATS_BYTES = 1 << 20


def _build(
    build: Build, program: Program, output: Path, timeout: float, stats: Optional[Path]
) -> Tuple[Optional[str], List[str]]:
    """Builds ``program`` into ``output``: (None, argv) when it built, else
    (the end of the compiler's error, argv)."""
    argv = build.argv(program.flags, [str(s) for s in program.sources], str(output))
    env = dict(build.env)
    if stats is not None and build.stats_variable is not None:
        env[build.stats_variable] = str(stats)
    try:
        run_tool(argv, timeout=timeout, env=child_environment(env), what=f"{build.name} building")
    except ToolError as err:
        return error_detail(err), argv
    return None, argv


def check_program(
    program: Program,
    reference: Build,
    candidate: Build,
    work: Path,
    *,
    run_timeout: float = 10.0,
    build_timeout: float = 300.0,
    findings: Optional[Path] = None,
) -> ProgramCheck:
    """Checks ``program`` (see the module's docstring) in a directory of
    ``work``; keeps a reproducer in ``findings`` when it is a finding."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="check-", dir=work) as tmp:
        scratch = Path(tmp)

        def done(status: str, detail: str = "", decisions: Optional[int] = None) -> ProgramCheck:
            return ProgramCheck(program.name, status, detail, decisions, time.monotonic() - start)

        error, reference_argv = _build(
            reference, program, scratch / "reference", build_timeout, None
        )
        if error is not None:
            return done("reference-build-failed", error)
        expected = run_executable(scratch / "reference", run_timeout, scratch)
        skip = reference_skip(expected, run_timeout)
        if skip is not None:
            return done(*skip)
        stats = scratch / "stats.jsonl" if candidate.stats_variable else None
        error, candidate_argv = _build(
            candidate, program, scratch / "candidate", build_timeout, stats
        )
        got = ProgramRun("", None, False)
        decisions: Optional[int] = None
        if error is not None:
            check = done("candidate-build-failed", error)
        else:
            policy_error = None
            if stats is not None:
                policy_error, decisions = policy_decisions(stats, _MAX_STATS_BYTES)
            got = run_executable(scratch / "candidate", run_timeout, scratch)
            if policy_error is not None:
                check = done("fallback", policy_error)
            else:
                check = done(*compare_runs(expected, got, run_timeout), decisions)
                if not check.finding:
                    return check
        if findings is not None:
            _keep(
                findings, program, check, reference_argv, candidate_argv, candidate, expected, got
            )
        return check


def _keep(
    findings: Path,
    program: Program,
    check: ProgramCheck,
    reference_argv: List[str],
    candidate_argv: List[str],
    candidate: Build,
    expected: ProgramRun,
    got: ProgramRun,
) -> None:
    """Writes the reproducer of a finding (see the module's docstring)."""
    name = program.dirname  # one path component: "/" is percent-encoded
    where = findings / (f"_{name}" if name in (".", "..") else name)
    where.mkdir(parents=True, exist_ok=True)
    for source in program.sources:
        shutil.copyfile(source, where / source.name)
    record = {
        "program": program.name,
        "status": check.status,
        "detail": check.detail,
        "reference": {"argv": reference_argv, **expected.summary()},
        "candidate": {"argv": candidate_argv, "env": candidate.env, **got.summary()},
    }
    (where / "finding.json").write_text(json.dumps(record, indent=1) + "\n")


def check_programs(
    programs: Sequence[Program],
    reference: Build,
    candidate: Build,
    work: Path,
    *,
    jobs: int = 2,
    run_timeout: float = 10.0,
    build_timeout: float = 300.0,
    findings: Optional[Path] = None,
    progress: Optional[Callable[[ProgramCheck], None]] = None,
) -> Dict[str, Any]:
    """Checks every program, ``jobs`` at once: the report (counts per
    status, the findings, each program's check, the wall seconds)."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()

    def one(program: Program) -> ProgramCheck:
        check = check_program(
            program,
            reference,
            candidate,
            work,
            run_timeout=run_timeout,
            build_timeout=build_timeout,
            findings=findings,
        )
        if progress is not None:
            progress(check)
        return check

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        checks = list(pool.map(one, programs))
    counts: Dict[str, int] = {}
    for check in checks:
        counts[check.status] = counts.get(check.status, 0) + 1
    return {
        "reference": reference.name,
        "candidate": candidate.name,
        "programs": len(checks),
        "compared": counts.get("same", 0) + sum(counts.get(s, 0) for s in FINDINGS),
        "counts": dict(sorted(counts.items())),
        "findings": [asdict(c) for c in checks if c.finding],
        "decisions": sum(c.decisions or 0 for c in checks),
        "run_timeout": run_timeout,
        "seconds": round(time.monotonic() - start, 3),
        "checks": [asdict(c) for c in checks],
    }

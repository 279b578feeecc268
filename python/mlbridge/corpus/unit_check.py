"""Keeping the translation units of a build that compile. A build may
compile probes meant to fail (Crypto++'s GNUmakefile tests the compiler
with ``TestPrograms/*.cpp``), and bear records them like any other
compilation. Each unit is checked with ``-fsyntax-only`` and the options the
corpus keeps of it; the entries of those that fail are left out of the
corpus, and recorded with clang's first error."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

from mlbridge.corpus.compdb import entries_and_files, read_compdb
from mlbridge.corpus.program import Program
from mlbridge.errors import CorpusError
from mlbridge.output_files import replace_file
from mlbridge.session import ToolError, run_tool

#: Longest one unit's check may take.
CHECK_TIMEOUT_S = 300.0
#: Longest error line recorded.
MAX_ERROR_CHARS = 300


def _first_error(compiler: str, program: Program) -> Optional[str]:
    """Why ``program`` does not compile (clang's first error), or None."""
    command = [compiler, "-fsyntax-only", "-w", *program.flags, str(program.sources[0])]
    try:
        run_tool(command, timeout=CHECK_TIMEOUT_S)
    except ToolError as err:
        if err.timed_out:
            return f"no answer in {CHECK_TIMEOUT_S:g} s"
        if err.returncode is None:
            raise CorpusError(str(err)) from None
        lines = err.stderr.splitlines()
        errors = [line for line in lines if "error" in line] or lines
        return (errors[0] if errors else f"exit status {err.returncode}")[-MAX_ERROR_CHARS:]
    return None


@dataclass(frozen=True)
class UnitCheck:
    """What :func:`keep_compiling_units` kept: how many units, and those it
    left out (absolute paths), each with why."""

    units: int
    excluded: Dict[str, str]


def keep_compiling_units(compdb: Path, out: Path, compiler: str, jobs: int) -> UnitCheck:
    """Writes to ``out`` the entries of ``compdb`` whose unit compiles
    (``jobs`` checks at once). Raises CorpusError when none compiles."""
    programs = read_compdb(compdb).programs
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        errors = list(pool.map(lambda p: _first_error(compiler, p), programs))
    failing = {p.sources[0]: e for p, e in zip(programs, errors) if e is not None}
    if len(failing) == len(programs):
        first = next(iter(failing.items()))
        raise CorpusError(f"{compdb}: no unit compiles ({first[0]}: {first[1]})")
    kept = [entry for entry, file in entries_and_files(compdb) if file not in failing]
    replace_file(out, (json.dumps(kept, indent=1) + "\n").encode("utf-8"))  # out may be compdb
    excluded = {str(file): error for file, error in sorted(failing.items())}
    return UnitCheck(len(programs) - len(failing), excluded)

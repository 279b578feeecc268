"""Running a program built two ways and comparing what it did: the
vocabulary of every differential check (docs/validation.md).

A reference build's executable and a candidate's are each run under a
deadline; :func:`compare_runs` says what came of it (a status of
:data:`FINDINGS` against the candidate, ``same``), and the statuses of
:data:`SKIPS` leave a program out as its own fault. :class:`ProgramCheck`
is one program's verdict, for :mod:`mlbridge.validation.programs` (whole
programs built from their sources) and for the environments' ``validate()``
(the state of one episode linked into its program).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from mlbridge.session import ToolError, run_tool

__all__ = [
    "FINDINGS",
    "SKIPS",
    "ProgramCheck",
    "ProgramRun",
    "compare_runs",
    "error_detail",
    "reference_skip",
    "run_executable",
]

#: Statuses that are findings against the candidate.
FINDINGS = (
    "mismatch",
    "candidate-build-failed",
    "candidate-crashed",
    "candidate-timed-out",
    "fallback",
)
#: Statuses that leave the program out (the program's fault).
SKIPS = ("reference-build-failed", "reference-failed", "reference-timed-out")
#: Characters of a program's output kept in a report (the whole output is
#: compared).
OUTPUT_KEPT = 4000


@dataclass
class ProgramCheck:
    """What the check of one program found: ``status`` is ``same``, one of
    :data:`FINDINGS` or one of :data:`SKIPS`."""

    program: str
    status: str
    #: What went wrong, in a line ("" when the outputs are the same).
    detail: str = ""
    #: The policy's decisions in the candidate build (None: no policy, or
    #: not counted).
    decisions: Optional[int] = None
    #: Wall seconds of the whole check (both builds and runs).
    seconds: float = 0.0

    @property
    def finding(self) -> bool:
        """Whether the candidate is at fault."""
        return self.status in FINDINGS

    @property
    def ok(self) -> bool:
        """Whether both builds ran and printed the same."""
        return self.status == "same"


@dataclass
class ProgramRun:
    """An executable's run: its output and how it ended."""

    stdout: str
    returncode: Optional[int]
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def summary(self) -> Dict[str, Any]:
        """The run for a report (the output's first :data:`OUTPUT_KEPT`
        characters)."""
        return {
            "stdout": self.stdout[:OUTPUT_KEPT],
            "returncode": self.returncode,
            "timed_out": self.timed_out,
        }


def error_detail(err: ToolError) -> str:
    """A failed build's error as one line: its lines joined by ``; ``, the
    last :data:`OUTPUT_KEPT` characters of them."""
    return "; ".join(line for line in str(err).splitlines() if line)[-OUTPUT_KEPT:] or "failed"


def run_executable(executable: Path, timeout: float, cwd: Path) -> ProgramRun:
    """Runs ``executable`` (no arguments, no input) in ``cwd`` for at most
    ``timeout`` seconds, its process group killed past it."""
    try:  # a relative path would be found from cwd
        argv = [str(executable.absolute())]
        done = run_tool(argv, timeout=timeout, cwd=cwd, what=executable.name)
    except ToolError as err:
        return ProgramRun("", err.returncode, err.timed_out)
    return ProgramRun(done.stdout, 0, False)


def reference_skip(expected: ProgramRun, timeout: float) -> Optional[Tuple[str, str]]:
    """(status, detail) of :data:`SKIPS` when the reference's run leaves
    the program out, else None."""
    if expected.timed_out:
        return "reference-timed-out", f"no end within {timeout:g} s"
    if not expected.ok:
        return "reference-failed", f"exit status {expected.returncode}"
    return None


def compare_runs(expected: ProgramRun, got: ProgramRun, timeout: float) -> Tuple[str, str]:
    """(status, detail) of a candidate's run ``got`` against a reference's
    ``expected`` that ran well: ``same``, ``candidate-timed-out``,
    ``candidate-crashed`` or ``mismatch`` (stdout differs)."""
    if got.timed_out:
        return "candidate-timed-out", f"no end within {timeout:g} s"
    if got.returncode != 0:
        return "candidate-crashed", f"exit status {got.returncode}"
    if got.stdout != expected.stdout:
        return "mismatch", "the outputs differ"
    return "same", ""

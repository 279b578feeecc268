"""Proof that optimised programs still work (docs/validation.md).

- :mod:`.build`: :class:`Build`, one way to build a program (a compiler's
  command, what its environment adds, where a deployed policy writes its
  statistics);
- :mod:`.programs`: the differential check of runnable programs (csmith's):
  each built by a reference (``clang-19 -O0``) and by a candidate (the
  policy deployed), run under a deadline, their outputs compared
  (:mod:`mlbridge.program_runs`); a mismatch is kept as a reproducer;
- :mod:`.projects` (with :mod:`.suites` and :mod:`.compiler_wrapper`): real
  projects built by their own build systems and tested by their own test
  suites, plainly and with the policy;
- :mod:`.episodes`: one episode of an environment on each module
  (robustness);
- :mod:`.deployment`: what ``mlbridge evaluate --validate`` runs for the
  programs it measured.

A problem says how a program is built with its policy deployed through its
:class:`~mlbridge.problems.capabilities.DeployedBuild` capability.
"""

from mlbridge.validation.build import Build, reference_build
from mlbridge.validation.programs import (
    FINDINGS,
    SKIPS,
    ProgramCheck,
    check_program,
    check_programs,
)

__all__ = [
    "FINDINGS",
    "SKIPS",
    "Build",
    "ProgramCheck",
    "check_program",
    "check_programs",
    "reference_build",
]

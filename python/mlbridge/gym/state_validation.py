"""``validate()`` of the environments (docs/gym.md, Validation): whether an
episode's state still computes what its program computed, as CompilerGym's
``env.validate()`` checks a benchmark.

The reference of a program: each of its modules compiled by ``clang -O0
-c`` (with the module's code-generation flags), linked by ``clang++
-no-pie`` (``-lm`` too), and run once under a deadline. The candidate: the
same objects with the episode's module's replaced by the object of its
state, linked and run the same way, so that the episode's module is all
that differs. Their outputs are compared (:mod:`mlbridge.program_runs`).

A program's reference is made once per environment and deadline
(:class:`ProgramReferences`), in the environment's work directory.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from mlbridge.gym.modules import Module
from mlbridge.program_runs import (
    ProgramCheck,
    ProgramRun,
    compare_runs,
    error_detail,
    reference_skip,
    run_executable,
)
from mlbridge.session import ToolError, run_tool

__all__ = ["LINK_FLAGS", "ProgramReferences"]

#: How the objects of a program are linked (after them): objects of any
#: relocation model link into a position-dependent executable; C programs
#: may use libm (clang++ links libstdc++ itself).
LINK_FLAGS = ("-no-pie", "-lm")


@dataclass
class _Reference:
    """A program's reference: its modules' objects and what its run printed,
    or why the program is left out (a status of ``SKIPS`` and its detail)."""

    objects: Dict[str, Path]
    run: Optional[ProgramRun] = None
    skip: Optional[Tuple[str, str]] = None


class ProgramReferences:
    """The references of the programs an environment validates, made in
    ``work`` by ``clang`` (objects) and ``linker`` (executables), each
    build within ``build_timeout`` seconds."""

    def __init__(self, work: Path, clang: str, linker: str, build_timeout: float) -> None:
        self.work = work
        self.clang = clang
        self.linker = linker
        self.build_timeout = build_timeout
        self._references: Dict[Tuple[str, float], _Reference] = {}

    def _link(self, objects: Sequence[Path], output: Path) -> Optional[str]:
        """Links ``objects`` into ``output``: None, or why it failed."""
        command = [self.linker, *map(str, objects), "-o", str(output), *LINK_FLAGS]
        try:
            run_tool(command, timeout=self.build_timeout, what=f"{self.linker} linking")
        except ToolError as err:
            return error_detail(err)
        return None

    def _reference(self, members: Sequence[Module], run_timeout: float) -> _Reference:
        program = members[0].program
        key = (program, run_timeout)
        if key in self._references:
            return self._references[key]
        digest = hashlib.sha256(f"{program}\0{run_timeout!r}".encode()).hexdigest()[:16]
        where = self.work / f"reference-{digest}"
        where.mkdir(parents=True, exist_ok=True)
        reference = _Reference({})
        for index, module in enumerate(members):
            output = where / f"{index}.o"
            command = [
                self.clang,
                "-O0",
                "-c",
                "-w",
                *module.codegen_flags(),
                str(module.bitcode),
                "-o",
                str(output),
            ]
            try:
                run_tool(command, timeout=self.build_timeout, what=f"{self.clang} -O0")
            except ToolError as err:
                reference.skip = ("reference-build-failed", f"{module.name}: {error_detail(err)}")
                break
            reference.objects[module.name] = output
        if reference.skip is None:
            executable = where / "reference"
            error = self._link(list(reference.objects.values()), executable)
            if error is not None:
                reference.skip = ("reference-build-failed", error)
            else:
                reference.run = run_executable(executable, run_timeout, where)
                reference.skip = reference_skip(reference.run, run_timeout)
        self._references[key] = reference
        return reference

    def check(
        self, module: Module, members: Sequence[Module], state: Path, run_timeout: float
    ) -> ProgramCheck:
        """Checks the object ``state`` of ``module`` inside its program, whose
        modules are ``members`` (``module`` among them)."""
        start = time.monotonic()

        def done(status: str, detail: str) -> ProgramCheck:
            return ProgramCheck(module.name, status, detail, None, time.monotonic() - start)

        reference = self._reference(members, run_timeout)
        if reference.skip is not None:
            return done(*reference.skip)
        assert reference.run is not None
        objects: List[Path] = [
            state if name == module.name else path for name, path in reference.objects.items()
        ]
        self.work.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="candidate-", dir=self.work) as tmp:
            executable = Path(tmp) / "candidate"
            error = self._link(objects, executable)
            if error is not None:
                return done("candidate-build-failed", error)
            got = run_executable(executable, run_timeout, Path(tmp))
        return done(*compare_runs(reference.run, got, run_timeout))

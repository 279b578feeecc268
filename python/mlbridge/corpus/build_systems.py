"""Building a project with its own build system so that it leaves a
``compile_commands.json``: CMake and Meson write one; for autotools and
plain make, ``bear`` records the compiler calls of the build.

Every step is a :func:`~mlbridge.corpus.steps.run_step` with CC and CXX set
to clang-19, run in the sandbox of :mod:`mlbridge.corpus.sandbox` where only
the sources and the build directory can be written.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from mlbridge.corpus.recipe import BuildSpec
from mlbridge.corpus.sandbox import BuildLimits, build_user, environment, hand_over, sandboxed
from mlbridge.corpus.steps import run_step
from mlbridge.errors import CorpusError

#: The compilers a corpus is built with (their flags are what the corpus keeps).
CC = "clang-19"
CXX = "clang++-19"


def build_steps(
    spec: BuildSpec,
    source: Path,
    build: Path,
    jobs: int,
    compilers: Tuple[str, str] = (CC, CXX),
    record: bool = True,
) -> List[List[str]]:
    """The commands that configure and build, in order (each run in
    ``source`` for autotools and make, anywhere for cmake and meson), with
    ``compilers`` (C, C++); ``record``: make and autotools builds run under
    ``bear`` for their ``compile_commands.json``."""
    cc, cxx = compilers
    compdb = str(build / "compile_commands.json")
    if spec.system == "cmake":
        return [
            [
                "cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
                "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", f"-DCMAKE_C_COMPILER={cc}",
                f"-DCMAKE_CXX_COMPILER={cxx}", *spec.args,
            ],
            ["cmake", "--build", str(build), "-j", str(jobs)],
        ]  # fmt: skip
    if spec.system == "meson":
        return [
            ["meson", "setup", *spec.args, str(build), str(source)],
            ["ninja", "-C", str(build), "-j", str(jobs)],
        ]
    make = (
        ["bear", "--output", compdb, "--", "make", f"-j{jobs}"] if record else ["make", f"-j{jobs}"]
    )
    if spec.system == "make":
        return [[*make, f"CC={cc}", f"CXX={cxx}", *spec.args]]
    configure = [["autoreconf", "-fi"]] if spec.autoreconf else []
    return [*configure, ["./configure", *spec.args], make]


def source_dir(spec: BuildSpec, sources: Path) -> Path:
    """Where the project's build system is run: ``spec.subdir`` of the
    unpacked ``sources`` (a real directory), or CorpusError."""
    source = sources / spec.subdir if spec.subdir else sources
    if not source.is_dir() or source.is_symlink():
        raise CorpusError(f"{sources}: no directory {spec.subdir!r} to build in")
    return source


class Sandbox:
    """Steps run one after another in the sandbox of
    :mod:`mlbridge.corpus.sandbox` where only the ``writable`` directories
    can be written, with ``compilers`` as CC and CXX, under ``limits``. As a
    context: the directories belong to the build user while it lasts and to
    the owner of the first one's parent afterwards. The ``readable``
    directories (the compilers' own, say) are seen read-only wherever they
    are."""

    def __init__(
        self,
        writable: Sequence[Path],
        limits: BuildLimits,
        compilers: Tuple[str, str] = (CC, CXX),
        readable: Sequence[Path] = (),
    ) -> None:
        self.writable = [w.resolve() for w in writable]
        self.readable = [r.resolve() for r in readable]
        self.limits = limits
        self.user = build_user(limits)
        self.env = environment({"CC": compilers[0], "CXX": compilers[1]}, self.writable[-1])
        parent = os.stat(self.writable[0].parent)
        self._owner = (parent.st_uid, parent.st_gid)

    def __enter__(self) -> "Sandbox":
        if self.user is not None:
            for directory in self.writable:
                hand_over(directory, (self.user.uid, self.user.gid))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.user is not None:
            for directory in self.writable:
                hand_over(directory, self._owner)

    def run(
        self, args: Sequence[str], cwd: Path, log: Path, what: str, timeout: Optional[float] = None
    ) -> None:
        """Runs ``args`` in ``cwd`` (:func:`~mlbridge.corpus.steps.run_step`:
        output appended to ``log``, CorpusError saying ``what`` failed), in
        at most ``timeout`` seconds (default: the limits' step deadline)."""
        command = sandboxed(
            args, self.writable, cwd.resolve(), self.limits, self.user, self.readable
        )
        deadline = self.limits.step_timeout_s if timeout is None else timeout
        run_step(command, cwd, log, what, deadline, self.env)


def build_project(
    spec: BuildSpec, sources: Path, build: Path, jobs: int, log: Path, limits: BuildLimits
) -> Path:
    """Configures and builds the project unpacked in ``sources`` (build
    files in ``build`` for cmake and meson, in the sources otherwise), each
    step sandboxed under ``limits``; the path of the ``compile_commands.json``
    it left. Both directories are handed to the build user for the build and
    back to the owner of their parent afterwards."""
    source = source_dir(spec, sources)
    build.mkdir(parents=True, exist_ok=True)
    with Sandbox([sources, build], limits) as sandbox:
        for args in build_steps(spec, source, build, jobs):
            sandbox.run(args, source, log, f"{spec.system} step {args[0]}")
    compdb = build / "compile_commands.json"
    try:
        regular = stat.S_ISREG(os.lstat(compdb).st_mode)
    except OSError:
        regular = False
    if not regular:
        raise CorpusError(
            f"{spec.system} build of {source} left no {compdb.name} as a regular file (log: {log})"
        )
    return compdb

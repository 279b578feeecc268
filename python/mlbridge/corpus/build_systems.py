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
from typing import List

from mlbridge.corpus.recipe import BuildSpec
from mlbridge.corpus.sandbox import BuildLimits, build_user, environment, hand_over, sandboxed
from mlbridge.corpus.steps import run_step
from mlbridge.errors import CorpusError

#: The compilers a corpus is built with (their flags are what the corpus keeps).
CC = "clang-19"
CXX = "clang++-19"


def _steps(spec: BuildSpec, source: Path, build: Path, jobs: int) -> List[List[str]]:
    """The commands that configure and build, in order (each run in
    ``source`` for autotools and make, anywhere for cmake and meson)."""
    compdb = str(build / "compile_commands.json")
    if spec.system == "cmake":
        return [
            [
                "cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
                "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", f"-DCMAKE_C_COMPILER={CC}",
                f"-DCMAKE_CXX_COMPILER={CXX}", *spec.args,
            ],
            ["cmake", "--build", str(build), "-j", str(jobs)],
        ]  # fmt: skip
    if spec.system == "meson":
        return [
            ["meson", "setup", *spec.args, str(build), str(source)],
            ["ninja", "-C", str(build), "-j", str(jobs)],
        ]
    bear = ["bear", "--output", compdb, "--", "make", f"-j{jobs}"]
    if spec.system == "make":
        return [[*bear, f"CC={CC}", f"CXX={CXX}", *spec.args]]
    configure = [["autoreconf", "-fi"]] if spec.autoreconf else []
    return [*configure, ["./configure", *spec.args], bear]


def build_project(
    spec: BuildSpec, sources: Path, build: Path, jobs: int, log: Path, limits: BuildLimits
) -> Path:
    """Configures and builds the project unpacked in ``sources`` (build
    files in ``build`` for cmake and meson, in the sources otherwise), each
    step sandboxed under ``limits``; the path of the ``compile_commands.json``
    it left. Both directories are handed to the build user for the build and
    back to the owner of their parent afterwards."""
    source = sources / spec.subdir if spec.subdir else sources
    if not source.is_dir() or source.is_symlink():
        raise CorpusError(f"{sources}: no directory {spec.subdir!r} to build in")
    build.mkdir(parents=True, exist_ok=True)
    user = build_user(limits)
    parent = os.stat(sources.parent)
    writable = [sources.resolve(), build.resolve()]
    env = environment({"CC": CC, "CXX": CXX}, writable[1])
    if user is not None:
        for directory in writable:
            hand_over(directory, (user.uid, user.gid))
    try:
        for args in _steps(spec, source, build, jobs):
            command = sandboxed(args, writable, source.resolve(), limits, user)
            run_step(
                command, source, log, f"{spec.system} step {args[0]}", limits.step_timeout_s, env
            )
    finally:
        if user is not None:
            for directory in writable:
                hand_over(directory, (parent.st_uid, parent.st_gid))
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

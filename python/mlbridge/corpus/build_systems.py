"""Building a project with its own build system so that it leaves a
``compile_commands.json``: CMake and Meson write one; for autotools and
plain make, ``bear`` records the compiler calls of the build.

Every step is a :func:`~mlbridge.corpus.steps.run_step` with CC and CXX set
to clang-19.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List

from mlbridge.corpus.recipe import BuildSpec
from mlbridge.corpus.steps import run_step
from mlbridge.errors import CorpusError

#: Longest one configure or build step may take.
STEP_TIMEOUT_S = 3600.0
#: The compilers a corpus is built with (their flags are what the corpus keeps).
CC = "clang-19"
CXX = "clang++-19"


def _environment() -> Dict[str, str]:
    env = dict(os.environ, CC=CC, CXX=CXX)
    env.pop("MAKEFLAGS", None)  # -j comes from the caller only
    return env


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


def build_project(spec: BuildSpec, sources: Path, build: Path, jobs: int, log: Path) -> Path:
    """Configures and builds the project unpacked in ``sources`` (build
    files in ``build`` for cmake and meson, in the sources otherwise); the
    path of the ``compile_commands.json`` it left."""
    source = sources / spec.subdir if spec.subdir else sources
    if not source.is_dir():
        raise CorpusError(f"{sources}: no directory {spec.subdir!r} to build in")
    build.mkdir(parents=True, exist_ok=True)
    for args in _steps(spec, source, build, jobs):
        run_step(args, source, log, f"{spec.system} step {args[0]}", STEP_TIMEOUT_S, _environment())
    compdb = build / "compile_commands.json"
    if not compdb.is_file():
        raise CorpusError(f"{spec.system} build of {source} left no {compdb.name} (log: {log})")
    return compdb

"""A project's C and C++ compiler (``CC``, ``CXX``) that optimises each unit
with a chosen module pipeline: clang-19's front end, the pipeline run by
``mlbridge-phase-service`` (a constant ``--pipeline``, or a model's choice
through ``--runner``), then clang-19's ``-Oz`` code generation
(docs/phase-ordering.md#deployment-in-a-build).

A command that compiles one C or C++ source to an object (``-c``) goes
through the three steps; one that compiles sources and links them at once
puts each source through them, then links; every other command (linking
objects, preprocessing, ``-S``, ``-x``, other languages) runs clang-19
itself, at the wrapper's level appended after the project's flags. With a
runner, ``$MLBRIDGE_PIPELINE_STATS`` names a file the service appends a
statistics record to per unit. When the service fails,
the unit gets clang's own ``-Oz`` pipeline instead (a build never breaks
because of the pipeline) and the wrapper says so on stderr. With
``default<Oz>`` as the pipeline, every object is plain ``clang-19 -Oz``'s,
byte for byte (the harness identity).

This file is also the wrapper itself: :func:`write_pipeline_wrappers` copies
it, under an interpreter line, as ``mlbridge-pipeline-cc`` and
``mlbridge-pipeline-c++`` beside a ``pipeline.json`` that says what they
run. It uses nothing but Python's standard library and runs isolated
(``python3 -I -S``). Where mlbridge was built with clang's C++ library, the
wrappers are instead two-line shell scripts running
``mlbridge-pipeline-clang`` (``mlbridge config --pipeline-clang``), which
does the three steps in one process with clang's own driver: the same
objects at a fraction of the cost.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

#: The wrappers' names: the C compiler's and the C++ compiler's.
NAMES = ("mlbridge-pipeline-cc", "mlbridge-pipeline-c++")
#: The file beside the wrappers that says what they run.
CONFIG = "pipeline.json"
#: Sources by extension: the language clang compiles them as.
LANGUAGES = {".c": "c", ".i": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++"}
LANGUAGES.update({".C": "c++", ".c++": "c++", ".ii": "c++"})
#: Options whose value is the next argument.
SEPARATE_VALUE = frozenset(
    "-o -I -D -U -include -imacros -isystem -iquote -idirafter -isysroot --sysroot "
    "-MF -MT -MQ -x -Xclang -mllvm -target -arch -Xlinker -Xpreprocessor -Xassembler "
    "-L -u -z -T -F -aux-triple -iprefix -iwithprefix -iwithprefixbefore -ivfsoverlay".split()
)
#: Options after which the command is not one compilation to an object.
NOT_ONE_OBJECT = frozenset("-E -S -M -MM -emit-llvm -fsyntax-only -### --analyze -".split())
#: The variable naming the file a runner's statistics records are appended
#: to, one per unit (docs/run-stats.md; none: not kept).
STATS_VARIABLE = "MLBRIDGE_PIPELINE_STATS"
#: Longest one step may take.
STEP_TIMEOUT = 3600.0


def write_pipeline_wrappers(
    directory: Path,
    *,
    clang: str,
    clangxx: str,
    service: str,
    pipeline: Optional[str] = None,
    runner: Optional[str] = None,
    max_steps: int = 32,
    no_baseline: bool = False,
    level: str = "-Oz",
    driver: Optional[str] = None,
) -> Tuple[str, str]:
    """Writes the wrappers into ``directory`` (readable by anyone); their
    paths (C, C++). Exactly one of ``pipeline`` (a constant pipeline) and
    ``runner`` (a runner configuration choosing the service's actions, at
    most ``max_steps``; with ``no_baseline``, for a model that does not read
    ``baseline_instcount``, the service skips computing it) says what
    optimises each unit. With ``driver`` (``mlbridge-pipeline-clang``), the
    wrappers run it, with its own clang and pipeline code, instead of
    ``clang``, ``clangxx`` and ``service``."""
    if (pipeline is None) == (runner is None):
        raise ValueError("give exactly one of pipeline and runner")
    if driver is not None:
        return _write_driver_scripts(
            directory, driver, pipeline, runner, max_steps, no_baseline, level
        )
    found = []
    for program in (clang, clangxx, service):
        path = shutil.which(program)
        if path is None:
            raise FileNotFoundError(f"{program}: no such program")
        found.append(os.path.abspath(path))
    config: Dict[str, object] = {
        "c": found[0],
        "c++": found[1],
        "service": found[2],
        "level": level,
        "pipeline": pipeline,
        "runner": runner,
        "max_steps": max_steps,
        "no_baseline": no_baseline,
    }
    # Imported here: the wrapper itself runs with the standard library alone.
    from mlbridge.validation.compiler_wrapper import install_scripts

    c, cxx = install_scripts(directory, Path(__file__), NAMES, CONFIG, config)
    return c, cxx


def _write_driver_scripts(
    directory: Path,
    driver: str,
    pipeline: Optional[str],
    runner: Optional[str],
    max_steps: int,
    no_baseline: bool,
    level: str,
) -> Tuple[str, str]:
    """The wrappers as shell scripts running ``driver`` (every value quoted
    for the shell); their paths (C, C++)."""
    path = shutil.which(driver)
    if path is None:
        raise FileNotFoundError(f"{driver}: no such program")
    options = ["--pipeline", pipeline] if pipeline is not None else ["--runner", str(runner)]
    if runner is not None:
        options += ["--max-steps", str(max_steps)] + (["--no-baseline"] if no_baseline else [])
    head = " ".join(shlex.quote(a) for a in [os.path.abspath(path), *options])
    # A runner's statistics go where the variable says, as with the service.
    stats = f' ${{{STATS_VARIABLE}:+--stats "${STATS_VARIABLE}"}}' if runner is not None else ""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    # What they run, as for the Python wrappers (read by nothing they run).
    record: Dict[str, object] = {
        "driver": os.path.abspath(path),
        "level": level,
        "pipeline": pipeline,
        "runner": runner,
        "max_steps": max_steps,
        "no_baseline": no_baseline,
    }
    (directory / CONFIG).write_text(json.dumps(record, indent=1) + "\n")
    (directory / CONFIG).chmod(0o644)
    paths = []
    for name, mode in zip(NAMES, ("", " --driver-mode=g++")):
        script = directory / name
        script.write_text(
            f"#!/bin/sh\n# {name}: clang-19 with a pipeline (docs/phase-ordering.md)\n"
            f'exec {head}{stats} --{mode} "$@" {shlex.quote(level)}\n'
        )
        script.chmod(0o755)
        paths.append(str(script))
    return paths[0], paths[1]


class Command:
    """A compiler command taken apart: its arguments without ``-o OUTPUT``
    (``rest``, in order), the positional ones among them (``inputs``), the
    output, the ``-x`` language; ``simple`` is False when it does something
    the wrapper leaves to clang (``-E``, ``-S``, LTO, standard input...)."""

    def __init__(self, args: Sequence[str]) -> None:
        self.rest: List[str] = []
        self.inputs: List[str] = []
        self.output: Optional[str] = None
        self.language: Optional[str] = None
        self.simple = True
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in NOT_ONE_OBJECT or arg.startswith("-flto"):
                self.simple = False
            if arg == "-o" or (arg.startswith("-o") and len(arg) > 2):
                if arg == "-o" and i + 1 >= len(args):
                    self.simple = False
                    break
                self.output = args[i + 1] if arg == "-o" else arg[2:]
                i += 2 if arg == "-o" else 1
                continue
            if arg in SEPARATE_VALUE:
                if i + 1 >= len(args):
                    self.simple = False
                    break
                if arg == "-x":
                    self.language = args[i + 1]
                self.rest += [arg, args[i + 1]]
                i += 2
                continue
            if arg.startswith("-x") and len(arg) > 2:
                self.language = arg[2:]
            if not arg.startswith("-"):
                self.inputs.append(arg)
            self.rest.append(arg)
            i += 1

    def sources(self) -> List[str]:
        """The inputs clang compiles as C or C++ (by ``-x`` or extension)."""
        return [
            a
            for a in self.inputs
            if (self.language or LANGUAGES.get(os.path.splitext(a)[1])) in ("c", "c++")
        ]


def one_object(args: Sequence[str]) -> Optional[Tuple[List[str], str, str]]:
    """When ``args`` compile exactly one C or C++ source to an object: the
    arguments without ``-o OUTPUT``, the source and the output; else None."""
    command = Command(args)
    if "-c" not in args or not command.simple or len(command.inputs) != 1:
        return None
    sources = command.sources()
    if len(sources) != 1:
        return None
    output = command.output
    if output is None:
        output = os.path.splitext(os.path.basename(sources[0]))[0] + ".o"
    return command.rest, sources[0], output


def compile_and_link(args: Sequence[str]) -> Optional[Tuple[List[str], List[str]]]:
    """When ``args`` compile C or C++ sources and link them (no ``-c``,
    no ``-x``): the command compiling one source (with ``{source}`` and
    ``{object}`` to fill in) and the linking command (with each source's
    place taken by ``{object:N}``); else None."""
    command = Command(args)
    if "-c" in args or not command.simple or command.language is not None:
        return None
    sources = command.sources()
    if not sources:
        return None
    options = [a for a in command.rest if a not in command.inputs]
    compile_one = [*options, "-c", "{source}", "-o", "{object}"]
    link, index = [], 0
    for arg in args:
        if arg in sources:
            link.append(f"{{object:{index}}}")
            index += 1
        else:
            link.append(arg)
    return compile_one, link


def codegen_options(args: Sequence[str]) -> List[str]:
    """The options of ``args`` that still matter when compiling the
    optimised module: ``-f*``, ``-m*`` (``-mllvm`` with its value), ``-g*``,
    ``-W[a,]...`` for the assembler, the target."""
    out: List[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-mllvm", "-target", "-arch") and i + 1 < len(args):
            out += [arg, args[i + 1]]
            i += 2
            continue
        if arg.startswith(("-f", "-m", "-g", "-Wa,", "--target=")):
            out.append(arg)
        i += 1
    return out


def _dependency_options(rest: Sequence[str], output: str) -> List[str]:
    """What keeps a dependency file as the project asked for it when the
    front end writes to another output: its target and its name."""
    if not any(a in ("-MD", "-MMD") for a in rest):
        return []
    extra = []
    if not any(a in ("-MT", "-MQ") or a.startswith(("-MT", "-MQ")) for a in rest):
        extra += ["-MT", output]
    if not any(a == "-MF" or a.startswith("-MF") for a in rest):
        extra += ["-MF", os.path.splitext(output)[0] + ".d"]
    return extra


def _run(command: List[str]) -> int:
    try:
        return subprocess.run(command, timeout=STEP_TIMEOUT).returncode
    except (OSError, subprocess.TimeoutExpired) as err:
        sys.stderr.write(f"{command[0]}: {err}\n")
        return 127


def run_command(config: Dict[str, object], compiler: str, args: List[str]) -> int:
    """Runs the wrapper's command for ``args``: the three steps for one
    object; for sources compiled and linked at once, the three steps for
    each, then the link; clang itself otherwise. The exit status."""
    level = str(config["level"])
    one = one_object(args)
    if one is not None:
        return compile_unit(config, compiler, one[0], one[2])
    split = compile_and_link(args)
    if split is None:
        return _run([compiler, *args, level])
    compile_one, link = split
    # The sources stand where the linking command has their objects.
    sources = [a for a, linked in zip(args, link) if linked.startswith("{object:")]
    with tempfile.TemporaryDirectory(prefix="mlbridge-link-") as tmp:
        objects = []
        for index, source in enumerate(sources):
            obj = os.path.join(tmp, f"{index}.o")
            fill = {"{source}": source, "{object}": obj}
            filled_one = [fill.get(a, a) for a in compile_one]
            unit = one_object(filled_one)
            if unit is None:
                status = _run([compiler, *filled_one, level])
            else:
                status = compile_unit(config, compiler, unit[0], obj)
            if status != 0:
                return status
            objects.append(obj)
        filled = [objects[int(a[8:-1])] if a.startswith("{object:") else a for a in link]
        return _run([compiler, *filled, level])


def compile_unit(config: Dict[str, object], compiler: str, rest: List[str], output: str) -> int:
    """The three steps for a command compiling one source to ``output``
    (``rest``: its arguments without ``-o``, :func:`one_object`); the exit
    status."""
    level = str(config["level"])
    service = str(config["service"])
    with tempfile.TemporaryDirectory(prefix="mlbridge-pipeline-") as tmp:
        module, optimised = os.path.join(tmp, "unit.bc"), os.path.join(tmp, "optimised.bc")
        front = [*rest, *_dependency_options(rest, output), level]
        front += ["-Xclang", "-disable-llvm-passes", "-emit-llvm", "-o", module]
        status = _run([compiler, *front])
        if status != 0:
            return status
        if config.get("pipeline"):
            step = [service, "--pipeline", str(config["pipeline"])]
        else:
            step = [service, "--runner", str(config["runner"])]
            step += ["--max-steps", str(config["max_steps"])]
            if config.get("no_baseline"):
                step.append("--no-baseline")
            stats = os.environ.get(STATS_VARIABLE)
            if stats:
                step += ["--stats", stats]
        step += ["--module", module, "-o", optimised]
        if _run(step) != 0:
            sys.stderr.write(f"{NAMES[0]}: the pipeline failed on {output}; clang's {level}\n")
            return _run([compiler, "-c", "-w", *codegen_options(rest), level, module, "-o", output])
        back = [compiler, "-c", "-w", *codegen_options(rest), level]
        back += ["-Xclang", "-disable-llvm-passes", optimised, "-o", output]
        return _run(back)


def main() -> int:
    """The wrapper: runs the command for this process's arguments."""
    me = Path(__file__).resolve()
    try:
        config = json.loads((me.parent / CONFIG).read_text())
        compiler = str(config["c++" if me.name.endswith("++") else "c"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        sys.stderr.write(f"{me.name}: {err}\n")
        return 127
    return run_command(config, compiler, sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())

"""A project's C and C++ compiler (``CC``, ``CXX``) that optimises each unit
with a chosen module pipeline: clang-19's front end, the pipeline run by
``mlbridge-phase-service`` (a constant ``--pipeline``, or a model's choice
through ``--runner``), then clang-19's ``-Oz`` code generation
(docs/phase-ordering.md#deployment-in-a-build).

A command that compiles one C or C++ source to an object (``-c``) goes
through the three steps; every other command (linking, preprocessing,
``-S``, several sources, other languages) runs clang-19 itself, at the
wrapper's level appended after the project's flags. When the service fails,
the unit gets clang's own ``-Oz`` pipeline instead (a build never breaks
because of the pipeline) and the wrapper says so on stderr. With
``default<Oz>`` as the pipeline, every object is plain ``clang-19 -Oz``'s,
byte for byte (the harness identity).

This file is also the wrapper itself: :func:`write_pipeline_wrappers` copies
it, under an interpreter line, as ``mlbridge-pipeline-cc`` and
``mlbridge-pipeline-c++`` beside a ``pipeline.json`` that says what they
run. It uses nothing but Python's standard library and runs isolated
(``python3 -I -S``).
"""

from __future__ import annotations

import json
import os
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
    level: str = "-Oz",
) -> Tuple[str, str]:
    """Writes the wrappers into ``directory`` (readable by anyone); their
    paths (C, C++). Exactly one of ``pipeline`` (a constant pipeline) and
    ``runner`` (a runner configuration choosing the service's actions, at
    most ``max_steps``) says what optimises each unit."""
    if (pipeline is None) == (runner is None):
        raise ValueError("give exactly one of pipeline and runner")
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
    }
    # Imported here: the wrapper itself runs with the standard library alone.
    from mlbridge.validation.compiler_wrapper import install_scripts

    c, cxx = install_scripts(directory, Path(__file__), NAMES, CONFIG, config)
    return c, cxx


def one_object(args: Sequence[str]) -> Optional[Tuple[List[str], str, str]]:
    """When ``args`` compile exactly one C or C++ source to an object: the
    arguments without ``-o OUTPUT``, the source and the output; else None."""
    if "-c" not in args:
        return None
    rest: List[str] = []
    sources: List[str] = []
    output: Optional[str] = None
    language: Optional[str] = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in NOT_ONE_OBJECT or arg.startswith("-flto"):
            return None
        if arg == "-o" or (arg.startswith("-o") and len(arg) > 2):
            if arg == "-o":
                if i + 1 >= len(args):
                    return None
                output, i = args[i + 1], i + 2
            else:
                output, i = arg[2:], i + 1
            continue
        if arg in SEPARATE_VALUE:
            if i + 1 >= len(args):
                return None
            if arg == "-x":
                language = args[i + 1]
            rest += [arg, args[i + 1]]
            i += 2
            continue
        if arg.startswith("-x") and len(arg) > 2:
            language = arg[2:]
        if not arg.startswith("-"):
            sources.append(arg)
        rest.append(arg)
        i += 1
    if len(sources) != 1:
        return None
    source = sources[0]
    kind = language or LANGUAGES.get(os.path.splitext(source)[1])
    if kind not in ("c", "c++"):
        return None
    if output is None:
        output = os.path.splitext(os.path.basename(source))[0] + ".o"
    return rest, source, output


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


def compile_unit(config: Dict[str, object], compiler: str, args: List[str]) -> int:
    """Runs the wrapper's command for ``args``: the three steps for one
    object, clang itself otherwise; the exit status."""
    level = str(config["level"])
    split = one_object(args)
    if split is None:
        return _run([compiler, *args, level])
    rest, _, output = split
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
    return compile_unit(config, compiler, sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())

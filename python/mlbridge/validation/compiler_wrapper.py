"""The compiler a project's own build system is given (``CC``, ``CXX``) when
``mlbridge validate --recipe`` builds it: a :class:`Build`'s compiler with
the project's arguments, then the build's own (its level and the plugin's
flags, so that they win over the project's ``-O2``), under the build's
launcher if it has one, in the build's environment (the plugin's settings).

This file is also the wrapper itself: :func:`write_wrappers` copies it,
under an interpreter line, as ``mlbridge-cc`` and ``mlbridge-c++`` beside a
``wrapper.json`` that holds the compilers, the arguments and the
environment. It uses nothing but Python's standard library and runs
isolated (``python3 -I -S``), so that a compilation costs a few
milliseconds more, and a build user who may not read mlbridge's install
can still run it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Sequence, Tuple

if TYPE_CHECKING:
    from mlbridge.validation.build import Build

#: The wrappers' names: the C compiler's and the C++ compiler's.
NAMES = ("mlbridge-cc", "mlbridge-c++")
#: The file beside the wrappers that says what they run.
CONFIG = "wrapper.json"
#: The interpreter the wrappers run under (Debian's; any Python 3 with its
#: standard library would do).
INTERPRETER = "/usr/bin/python3"


def write_wrappers(directory: Path, build: "Build") -> Tuple[str, str]:
    """Writes the wrappers of ``build`` into ``directory`` (made readable by
    anyone); their paths (C, C++). The build's C++ driver is ``build.cxx``."""
    compilers: List[str] = []
    launcher = list(build.launcher[:1])
    for name in (build.command[0], build.cxx or build.command[0], *launcher):
        found = shutil.which(name)
        if found is None:
            raise FileNotFoundError(f"{name}: no such program on PATH")
        compilers.append(found)
    config = {
        "c": compilers[0],
        "c++": compilers[1],
        "append": list(build.command[1:]),
        "launcher": compilers[2:] + list(build.launcher[1:]),
        "env": dict(build.env),
    }
    c, cxx = install_scripts(directory, Path(__file__), NAMES, CONFIG, config)
    return c, cxx


def install_scripts(
    directory: Path, script: Path, names: Sequence[str], config_name: str, config: object
) -> List[str]:
    """Writes ``config`` as the JSON file ``config_name`` and the Python
    file ``script``, under an isolated interpreter line, as each of
    ``names`` into ``directory`` (everything readable by anyone, the
    scripts executable); the scripts' paths."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    (directory / config_name).write_text(json.dumps(config, indent=1) + "\n")
    (directory / config_name).chmod(0o644)
    body = script.read_text()
    paths: List[str] = []
    for name in names:
        wrapper = directory / name
        wrapper.write_text(f"#!{INTERPRETER} -IS\n{body}")
        wrapper.chmod(0o755)
        paths.append(str(wrapper))
    return paths


def command(config: Dict[str, object], name: str, args: List[str]) -> List[str]:
    """The compiler's command for the wrapper called ``name`` run with ``args``."""
    compiler = config["c++" if name.endswith("++") else "c"]
    append, launcher = config["append"], config["launcher"]
    if not isinstance(compiler, str) or not isinstance(append, list):
        raise ValueError(f"{CONFIG}: malformed")
    if not isinstance(launcher, list):
        raise ValueError(f"{CONFIG}: malformed")
    return [*(str(a) for a in launcher), compiler, *args, *(str(a) for a in append)]


def main() -> int:
    """Runs the compiler in this process's place; 127 when it cannot."""
    me = Path(__file__).resolve()
    try:
        config = json.loads((me.parent / CONFIG).read_text())
        argv = command(config, me.name, sys.argv[1:])
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in dict(config["env"]).items()})
        os.execve(argv[0], argv, env)
    except (OSError, ValueError, KeyError, TypeError) as err:
        sys.stderr.write(f"{me.name}: {err}\n")
    return 127


if __name__ == "__main__":
    raise SystemExit(main())

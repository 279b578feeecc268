"""A module's functions, each extracted into a module of its own.

Code generation allocates registers function by function, so one function
alone in a module is allocated as it is in its module; a problem of the back
end can then make an episode of every function, each with its own reward
(MLGO rewards eviction per function). ``llvm-nm-19`` lists a module's
defined functions; ``llvm-extract-19 --func=NAME`` keeps one and declares
what it references.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import List, Tuple

from mlbridge.errors import MlbridgeError
from mlbridge.jsontext import load_json_value
from mlbridge.session import run_tool

NM = "llvm-nm-19"
EXTRACT = "llvm-extract-19"
#: Longest one listing or extraction may take.
TIMEOUT = 120.0
#: nm's letters of functions (text), global and local.
_FUNCTION_TYPES = frozenset({"T", "t", "W"})


class FunctionError(MlbridgeError):
    """A module's functions cannot be listed or extracted."""


def _run(command: List[str]) -> str:
    return run_tool(command, timeout=TIMEOUT, tail=1000, error=FunctionError).stdout


def defined_functions(bitcode: Path, nm: str = NM) -> List[str]:
    """The functions ``bitcode`` defines, in nm's order."""
    out = _run([nm, "--defined-only", "--format=posix", str(bitcode)])
    names = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1] in _FUNCTION_TYPES:
            names.append(fields[0])
    return names


def function_modules(
    bitcode: Path, cache_dir: Path, extract: str = EXTRACT, nm: str = NM
) -> List[Tuple[str, Path]]:
    """(function, its own module) for every function ``bitcode`` defines,
    extracted once into ``cache_dir`` (by the hash of the module's bytes).
    A symbol that cannot be extracted on its own (an alias nm lists as a
    function, such as a C++ complete-object destructor) is left out."""
    digest = hashlib.sha256(bitcode.read_bytes()).hexdigest()[:24]
    directory = cache_dir / digest
    index = directory / "functions.json"
    if index.is_file():
        names = load_json_value(index.read_bytes(), str(index))
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise FunctionError(f"{index} is not a list of function names")
        return [(name, directory / f"{i}.bc") for i, name in enumerate(names)]
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for name in defined_functions(bitcode, nm):
        out = directory / f"{len(names)}.bc"
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        try:
            _run([extract, f"--func={name}", str(bitcode), "-o", str(tmp)])
        except FunctionError as err:
            tmp.unlink(missing_ok=True)
            if "doesn't contain function named" not in str(err):
                raise
            continue
        os.replace(tmp, out)
        names.append(name)
    tmp_index = index.with_name(f"functions.json.{os.getpid()}.tmp")
    tmp_index.write_text(json.dumps(names), "utf-8")
    os.replace(tmp_index, index)
    return [(name, directory / f"{i}.bc") for i, name in enumerate(names)]

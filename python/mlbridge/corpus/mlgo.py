"""LLVM's MLGO corpus layout, as mlgo-utils' ``extract_ir`` writes it:
``corpus_description.json`` lists the ``modules`` (paths relative to the
corpus, without extension) and says ``has_thinlto``; each module is
``MODULE.bc`` (the bitcode clang embedded with ``-fembed-bitcode=all``,
before optimisation) and ``MODULE.cmd`` (the options of the compilation that
made it, separated by NUL bytes). Each module is one program, compiled from
its ``.bc``.

A ThinLTO corpus (``has_thinlto``, extracted from a build with
``-flto=thin`` whose linker ran with ``--save-temps=import
--thinlto-emit-index-files``) has, for each module, ``MODULE.bc`` after
ThinLTO's import (functions of other modules already in it, symbols
promoted and internalized as the thin link decided) and ``MODULE.thinlto.bc``,
its index. It is compiled as a distributed ThinLTO backend with the import
already done, as ml-compiler-opt compiles it: ``-fthinlto-index=MODULE.thinlto.bc
-mllvm -thinlto-assume-merged``. The index names the project's other
modules by their paths in the original build; with the import done, clang
opens none of them.

The recorded options (``.cmd``, or ``global_command_override`` when the
description has one) are read and checked, not used (the programs have
no flags: nothing of them reaches a command line): they are ``clang
-cc1`` options, which the clang driver does not accept, and what they say
that matters for the code is already in the bitcode (the target triple and
data layout, each function's attributes: target CPU and features, ``optsize``
/ ``minsize`` / ``optnone`` from the original ``-O`` level). Their
``-mllvm`` options are dropped too: they would change the passes whose
output is measured (the loop sets the optimisation level and the inliner's
advisor)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

from mlbridge.corpus.files import MAX_CMD_BYTES, inside, read_capped, read_json
from mlbridge.corpus.program import Program
from mlbridge.corpus.split import hash_split
from mlbridge.errors import CorpusError

NAME = "corpus_description.json"
#: How a module of a ThinLTO corpus is compiled, besides its index.
THINLTO_FLAGS = ("-mllvm", "-thinlto-assume-merged")


def read_cmd(path: Path) -> Tuple[str, ...]:
    """The options recorded in a module's ``.cmd`` file (NUL-separated)."""
    data = read_capped(path, MAX_CMD_BYTES)
    return tuple(a for a in data.decode("utf-8", "surrogateescape").split("\0") if a)


def mlgo_programs(description: Path) -> List[Program]:
    """The modules of the MLGO corpus described by ``description``, each one
    program, split by :func:`hash_split`."""
    root = description.parent
    doc = read_json(description)
    if not isinstance(doc, dict):
        raise CorpusError(f"{description}: expected a JSON object")
    thinlto = doc.get("has_thinlto", False)
    if not isinstance(thinlto, bool):
        raise CorpusError(f'{description}: "has_thinlto" must be true or false')
    override = doc.get("global_command_override")
    if override is not None and (
        not isinstance(override, list) or not all(isinstance(a, str) for a in override)
    ):
        raise CorpusError(f'{description}: "global_command_override" must be a list of strings')
    modules = doc.get("modules")
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise CorpusError(f'{description}: "modules" must be a list of strings')
    if not modules:
        raise CorpusError(f'{description}: "modules" is empty')
    if len(set(modules)) != len(modules):
        raise CorpusError(f"{description}: a module is listed twice")
    splits = hash_split(modules)
    programs = []
    for module in modules:
        inside(root, module, f"{description}: module")
        for end in (".bc", ".cmd", ".thinlto.bc") if thinlto else (".bc", ".cmd"):
            path = inside(root, module + end, f"{description}: module")
            if not path.is_file():
                raise CorpusError(f"{description}: module {module!r}: {path} does not exist")
        if override is None:
            read_cmd(root / f"{module}.cmd")  # checked: readable, within the size cap
        index = (root / f"{module}.thinlto.bc").absolute()
        flags = (f"-fthinlto-index={index}", *THINLTO_FLAGS) if thinlto else ()
        programs.append(Program(module, (root / f"{module}.bc",), flags, splits[module]))
    return programs

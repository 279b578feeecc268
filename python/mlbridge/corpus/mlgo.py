"""LLVM's MLGO corpus layout, as mlgo-utils' ``extract_ir`` writes it:
``corpus_description.json`` lists the ``modules`` (paths relative to the
corpus, without extension) and says ``has_thinlto``; each module is
``MODULE.bc`` (the bitcode clang embedded with ``-fembed-bitcode=all``,
before optimisation) and ``MODULE.cmd`` (the options of the compilation that
made it, separated by NUL bytes). Each module is one program, compiled from
its ``.bc``.

The recorded options (``.cmd``, or ``global_command_override`` when the
description has one) are read and checked, not used (the programs have
no flags: nothing of them reaches a command line): they are ``clang
-cc1`` options, which the clang driver does not accept, and what they say
that matters for the code is already in the bitcode (the target triple and
data layout, each function's attributes: target CPU and features, ``optsize``
/ ``minsize`` / ``optnone`` from the original ``-O`` level). Their
``-mllvm`` options are dropped too: they would change the passes whose
output is measured (the loop sets the optimisation level and the inliner's
advisor). ThinLTO corpora (``has_thinlto``: modules with summaries and
import lists) are not supported yet."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

from mlbridge.corpus.files import MAX_CMD_BYTES, inside, read_capped, read_json
from mlbridge.corpus.program import Program
from mlbridge.corpus.split import hash_split
from mlbridge.errors import CorpusError

NAME = "corpus_description.json"


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
    if thinlto:
        raise CorpusError(
            f"{description}: a ThinLTO corpus (has_thinlto): not supported yet; "
            f"extract the corpus from a build without -flto=thin"
        )
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
    sources = []
    for module in modules:
        base = inside(root, module, f"{description}: module")
        bitcode, cmd = Path(f"{base}.bc"), Path(f"{base}.cmd")
        for needed in (bitcode, cmd):
            if not needed.is_file():
                raise CorpusError(f"{description}: module {module!r}: {needed} does not exist")
        inside(root, f"{module}.bc", f"{description}: module")
        if override is None:
            read_cmd(cmd)  # checked: readable, within the size cap
        sources.append(bitcode)
    splits = hash_split(modules)
    return [Program(m, (bc,), (), splits[m]) for m, bc in zip(modules, sources)]

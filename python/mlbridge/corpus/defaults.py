"""The programs of the loop (docs/loop.md, Programs): the bundled demo
programs (package data of this package, ``bundled/``), always training programs,
then those of a corpus in any format of :mod:`mlbridge.corpus`
(docs/corpus.md) with its split. Where the corpus is when none is given:
:func:`default_corpus`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from mlbridge.corpus import load as _load
from mlbridge.corpus.program import TRAIN, Program
from mlbridge.errors import MlbridgeError

__all__ = [
    "BUNDLED",
    "CORPUS_VARIABLE",
    "LOCAL_CORPUS",
    "bundled_programs",
    "default_corpus",
    "load_corpus",
    "validation_set_aside",
]

#: The bundled demo programs (package data; the demo, examples/demo, compiles them).
BUNDLED = Path(__file__).resolve().parent / "bundled"
#: The environment variable naming the default corpus.
CORPUS_VARIABLE = "MLBRIDGE_CORPUS"
#: The default corpus, relative to the current directory (tools/fetch_corpus.py's).
LOCAL_CORPUS = Path(".cache") / "corpus"


def bundled_programs() -> List[Program]:
    """The demo's C programs, training programs named ``demo-STEM``."""
    return [
        Program(f"demo-{p.stem}", (p,), (), TRAIN)
        for p in sorted(BUNDLED.glob("*.c"))
        if p.is_file()
    ]


def default_corpus(environ: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    """The corpus when ``--corpus`` is not given: ``$MLBRIDGE_CORPUS``, else
    ``./.cache/corpus`` when it exists, else None (bundled programs only)."""
    env = os.environ if environ is None else environ
    if env.get(CORPUS_VARIABLE):
        return Path(env[CORPUS_VARIABLE])
    local = Path.cwd() / LOCAL_CORPUS
    return local if local.is_dir() else None


def load_corpus(
    corpus: Optional[Path], quick: bool = False, validation_aside: bool = False
) -> List[Program]:
    """The bundled programs, then those of ``corpus`` (None: none; any format
    of :func:`mlbridge.corpus.load_corpus`). ``quick`` keeps only the small
    programs of the fetched corpus. With ``validation_aside``, a corpus
    without validation programs gets a stable share of its own training
    programs as validation ones (:func:`~mlbridge.corpus.split.set_aside_validation`;
    the bundled programs stay training programs)."""
    programs = bundled_programs()
    if corpus is not None:
        programs += _load.load_corpus(corpus, quick)
    seen: Dict[str, Program] = {}
    for program in programs:
        if program.name in seen:
            raise MlbridgeError(
                f"two programs are named {program.name} (rename one: the bundled ones are demo-*)"
            )
        seen[program.name] = program
    return validation_set_aside(programs) if validation_aside else programs


def validation_set_aside(programs: List[Program]) -> List[Program]:
    """``programs`` (of :func:`load_corpus`), with a stable share of their
    training programs moved to validation when none is there; the bundled
    programs stay training programs
    (:func:`~mlbridge.corpus.split.set_aside_validation`)."""
    from mlbridge.corpus.split import set_aside_validation

    return set_aside_validation(programs, keep={p.name for p in bundled_programs()})

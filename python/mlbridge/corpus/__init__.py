"""Corpora of programs to compile, in any of the formats of docs/corpus.md:
a directory of C files or LLVM bitcode, a ``compile_commands.json``, LLVM's
MLGO corpus layout (``corpus_description.json``, as ``extract_ir`` writes
it), and the reference corpus of tools/fetch_corpus.py; split into training
and held-out programs.

- :mod:`~mlbridge.corpus.program`: :class:`Program`, the split names;
- :mod:`~mlbridge.corpus.split`: the stable train/held-out split;
- :mod:`~mlbridge.corpus.directory`, :mod:`~mlbridge.corpus.compdb`,
  :mod:`~mlbridge.corpus.mlgo`, :mod:`~mlbridge.corpus.fetched`: one format each;
- :mod:`~mlbridge.corpus.files`: untrusted files (size caps, paths kept inside);
- :mod:`~mlbridge.corpus.load`: :func:`load_corpus`, which recognises the format.
"""

from mlbridge.corpus.load import detect, load_corpus
from mlbridge.corpus.program import HELD_OUT, TRAIN, Program
from mlbridge.corpus.split import HELD_OUT_FRACTION, hash_split, held_out_score, split
from mlbridge.errors import CorpusError

__all__ = [
    "HELD_OUT",
    "HELD_OUT_FRACTION",
    "TRAIN",
    "CorpusError",
    "Program",
    "detect",
    "hash_split",
    "held_out_score",
    "load_corpus",
    "split",
]

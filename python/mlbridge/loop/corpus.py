"""The C programs of the loop (docs/loop.md, Programs).

- The bundled demo programs (package data of :mod:`mlbridge.demo`): always
  training programs, whatever the corpus.
- The reference corpus that tools/fetch_corpus.py fetches (pinned,
  checksummed) into .cache/corpus: lz4, xxHash, Brotli, zstd, SQLite, with a
  fixed split. A directory with its layout (lz4/lz4libs, xxhash/deps/xxhash,
  brotli/c or zstd/zstd/zstd.c) is read as that corpus.
- Any other directory, a user's own: each top-level ``*.c`` file is one
  program; each subdirectory holding ``.c`` files is one program (those
  files, compiled with ``-I`` of the subdirectory). A stable hash of each
  program's name puts about HELD_OUT_FRACTION of them in the held-out set,
  and at least one (at least one in training too from two programs on).

Where the corpus is when none is given: :func:`default_corpus`.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import mlbridge.demo
from mlbridge.errors import MlbridgeError

TRAIN = "train"
HELD_OUT = "held-out"
#: The share of a user's programs measured as held-out programs.
HELD_OUT_FRACTION = 0.3
#: The bundled demo programs (package data).
BUNDLED = Path(mlbridge.demo.__file__).resolve().parent / "data"
#: The environment variable naming the default corpus.
CORPUS_VARIABLE = "MLBRIDGE_CORPUS"
#: The default corpus, relative to the current directory (tools/fetch_corpus.py's).
LOCAL_CORPUS = Path(".cache") / "corpus"
#: Paths that only tools/fetch_corpus.py's layout has.
_FETCHED_MARKERS = ("lz4/lz4libs", "xxhash/deps/xxhash", "brotli/c", "zstd/zstd/zstd.c")


@dataclass(frozen=True)
class Program:
    """Translation units compiled and measured together."""

    name: str
    sources: Tuple[Path, ...]
    flags: Tuple[str, ...]
    split: str

    @property
    def lines(self) -> int:
        return sum(p.read_bytes().count(b"\n") for p in self.sources)


def _sorted(directory: Path, pattern: str = "*.c") -> Tuple[Path, ...]:
    return tuple(sorted(p for p in directory.glob(pattern) if p.is_file()))


def bundled_programs() -> List[Program]:
    """The demo's C programs, training programs named ``demo-STEM``."""
    return [Program(f"demo-{p.stem}", (p,), (), TRAIN) for p in _sorted(BUNDLED)]


def default_corpus(environ: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    """The corpus when ``--corpus`` is not given: ``$MLBRIDGE_CORPUS``, else
    ``./.cache/corpus`` when it exists, else None (bundled programs only)."""
    env = os.environ if environ is None else environ
    if env.get(CORPUS_VARIABLE):
        return Path(env[CORPUS_VARIABLE])
    local = Path.cwd() / LOCAL_CORPUS
    return local if local.is_dir() else None


def is_fetched_corpus(directory: Path) -> bool:
    """Whether ``directory`` has tools/fetch_corpus.py's layout."""
    return any((directory / marker).exists() for marker in _FETCHED_MARKERS)


def fetched_programs(cache: Path, quick: bool = False) -> List[Program]:
    """The programs of tools/fetch_corpus.py's corpus whose files exist.
    ``quick``: only the small ones (lz4, xxHash)."""
    programs = []
    lz4 = cache / "lz4" / "lz4libs"
    if lz4.is_dir():
        programs.append(Program("lz4", _sorted(lz4), (f"-I{lz4}",), TRAIN))
    xxhash = cache / "xxhash" / "deps" / "xxhash"
    if xxhash.is_dir():
        programs.append(Program("xxhash", _sorted(xxhash), (f"-I{xxhash}",), HELD_OUT))
    if quick:
        return programs
    brotli = cache / "brotli" / "c"
    if brotli.is_dir():
        include = (f"-I{brotli / 'include'}",)
        programs.append(
            Program(
                "brotli-enc", _sorted(brotli / "enc") + _sorted(brotli / "common"), include, TRAIN
            )
        )
        programs.append(
            Program(
                "brotli-dec",
                _sorted(brotli / "dec") + (brotli / "tools" / "brotli.c",),
                include,
                HELD_OUT,
            )
        )
    zstd = cache / "zstd" / "zstd"
    if (zstd / "zstd.c").exists():
        programs.append(Program("zstd", (zstd / "zstd.c",), (f"-I{zstd}",), HELD_OUT))
    sqlite = cache / "sqlite3.c"
    if sqlite.exists():
        programs.append(
            Program(
                "sqlite3",
                (sqlite,),
                ("-DSQLITE_OMIT_LOAD_EXTENSION", "-DSQLITE_THREADSAFE=0"),
                HELD_OUT,
            )
        )
    return programs


def held_out_score(name: str) -> float:
    """A stable number in [0, 1) for ``name`` (SHA-256): held-out below
    HELD_OUT_FRACTION."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def hash_split(names: Sequence[str]) -> Dict[str, str]:
    """Each name's split by :func:`held_out_score`; at least one held-out, and
    at least one training name when there are two or more."""
    scores = {name: held_out_score(name) for name in names}
    splits = {name: HELD_OUT if s < HELD_OUT_FRACTION else TRAIN for name, s in scores.items()}
    if names and HELD_OUT not in splits.values():
        splits[min(scores, key=scores.__getitem__)] = HELD_OUT
    if len(names) >= 2 and TRAIN not in splits.values():
        splits[max(scores, key=scores.__getitem__)] = TRAIN
    return splits


def user_programs(directory: Path) -> List[Program]:
    """A user's directory: each top-level ``*.c`` file and each subdirectory
    holding ``.c`` files is one program (hidden entries are skipped), split
    by :func:`hash_split`."""
    found: List[Tuple[str, Tuple[Path, ...], Tuple[str, ...]]] = []
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_file() and entry.suffix == ".c":
            found.append((entry.name, (entry,), ()))
        elif entry.is_dir() and _sorted(entry):
            found.append((entry.name, _sorted(entry), (f"-I{entry}",)))
    if not found:
        raise MlbridgeError(
            f"no C programs in {directory}: put each program's .c file at "
            f"its top level, or each program's .c files in a subdirectory"
        )
    splits = hash_split([name for name, _, _ in found])
    return [Program(name, sources, flags, splits[name]) for name, sources, flags in found]


def load_corpus(corpus: Optional[Path], quick: bool = False) -> List[Program]:
    """The bundled programs, then those of ``corpus`` (None: none).
    ``quick`` keeps only the small programs of the fetched corpus."""
    programs = bundled_programs()
    if corpus is not None:
        if not corpus.is_dir():
            raise MlbridgeError(f"the corpus {corpus} is not a directory")
        corpus = Path(os.path.abspath(corpus))
        programs += (
            fetched_programs(corpus, quick) if is_fetched_corpus(corpus) else user_programs(corpus)
        )
    seen: Dict[str, Program] = {}
    for program in programs:
        if program.name in seen:
            raise MlbridgeError(
                f"two programs are named {program.name} (rename one: the bundled ones are demo-*)"
            )
        seen[program.name] = program
    return programs


def split(programs: Sequence[Program], which: str) -> List[Program]:
    """The programs of split ``which`` (TRAIN or HELD_OUT)."""
    return [p for p in programs if p.split == which]

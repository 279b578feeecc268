"""The C programs of the loop: small bundled ones and real libraries that
tools/fetch_corpus.py fetches (pinned, checksummed) into .cache/corpus."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Tuple

TRAIN = "train"
HELD_OUT = "held-out"


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
    return tuple(sorted(directory.glob(pattern)))


def load_corpus(cache: Path, demo: Path, quick: bool = False) -> List[Program]:
    """The programs whose files exist. ``quick``: only the small ones (for
    tests): the bundled demo programs and lz4, xxHash."""
    programs = [Program(f"demo-{p.stem}", (p,), (), TRAIN) for p in _sorted(demo)]
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
        programs.append(Program("brotli-enc", _sorted(brotli / "enc") +
                                _sorted(brotli / "common"), include, TRAIN))
        programs.append(Program("brotli-dec", _sorted(brotli / "dec") +
                                (brotli / "tools" / "brotli.c",), include, HELD_OUT))
    zstd = cache / "zstd" / "zstd"
    if (zstd / "zstd.c").exists():
        programs.append(Program("zstd", (zstd / "zstd.c",), (f"-I{zstd}",), HELD_OUT))
    sqlite = cache / "sqlite3.c"
    if sqlite.exists():
        programs.append(Program("sqlite3", (sqlite,), ("-DSQLITE_OMIT_LOAD_EXTENSION",
                                                       "-DSQLITE_THREADSAFE=0"), HELD_OUT))
    return programs


def split(programs: Sequence[Program], which: str) -> List[Program]:
    return [p for p in programs if p.split == which]

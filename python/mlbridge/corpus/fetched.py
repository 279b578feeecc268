"""The reference corpus that tools/fetch_corpus.py fetches (pinned,
checksummed) into .cache/corpus: lz4, xxHash, Brotli, zstd, SQLite, with a
fixed split (training: lz4, Brotli's encoder; held-out: the others)."""

from __future__ import annotations

from pathlib import Path
from typing import List

from mlbridge.corpus.directory import sorted_sources
from mlbridge.corpus.program import HELD_OUT, TRAIN, Program

#: Paths that only tools/fetch_corpus.py's layout has.
MARKERS = ("lz4/lz4libs", "xxhash/deps/xxhash", "brotli/c", "zstd/zstd/zstd.c")


def is_fetched_corpus(directory: Path) -> bool:
    """Whether ``directory`` has tools/fetch_corpus.py's layout."""
    return any((directory / marker).exists() for marker in MARKERS)


def fetched_programs(cache: Path, quick: bool = False) -> List[Program]:
    """The programs of tools/fetch_corpus.py's corpus whose files exist.
    ``quick``: only the small ones (lz4, xxHash)."""
    programs = []
    lz4 = cache / "lz4" / "lz4libs"
    if lz4.is_dir():
        programs.append(Program("lz4", sorted_sources(lz4), (f"-I{lz4}",), TRAIN))
    xxhash = cache / "xxhash" / "deps" / "xxhash"
    if xxhash.is_dir():
        programs.append(Program("xxhash", sorted_sources(xxhash), (f"-I{xxhash}",), HELD_OUT))
    if quick:
        return programs
    brotli = cache / "brotli" / "c"
    if brotli.is_dir():
        include = (f"-I{brotli / 'include'}",)
        programs.append(
            Program(
                "brotli-enc",
                sorted_sources(brotli / "enc") + sorted_sources(brotli / "common"),
                include,
                TRAIN,
            )
        )
        programs.append(
            Program(
                "brotli-dec",
                sorted_sources(brotli / "dec") + (brotli / "tools" / "brotli.c",),
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

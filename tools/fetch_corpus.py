"""Fetch real C programs used as compiler inputs by the tests and benchmarks.

The SQLite amalgamation (~260k lines of real C) ships inside the npm package
better-sqlite3. This script fetches that package with `npm pack` at a pinned
version, checks its published sha512 integrity, and extracts sqlite3.c into
.cache/corpus/. Idempotent; nothing third-party is committed.

    python tools/fetch_corpus.py [--dest DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from npm_package import fetch_package

PACKAGE = "better-sqlite3@11.8.1"
INTEGRITY = ("sha512-9BxNaBkblMjhJW8sMRZxnxVTRgbRmssZW0Oxc1MPBTfiR+WW21e2Mk4qu8CzrcZb1LwPCnFs"
             "fDEzq+SNcBU8eg==")
MEMBER = "package/deps/sqlite3/sqlite3.c"
ROOT = Path(__file__).resolve().parent.parent


def fetch(dest: Path) -> Path:
    """Make sure dest/sqlite3.c exists; return its path."""
    target = dest / "sqlite3.c"
    if target.exists():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tarball = fetch_package(PACKAGE, INTEGRITY, Path(tmp))
        with tarfile.open(tarball) as archive:
            source = archive.extractfile(MEMBER)
            if source is None:
                raise RuntimeError(f"{PACKAGE} has no {MEMBER}")
            partial = target.with_suffix(".part")
            partial.write_bytes(source.read())
            partial.rename(target)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=ROOT / ".cache" / "corpus")
    args = parser.parse_args()
    try:
        path = fetch(args.dest)
    except (RuntimeError, subprocess.SubprocessError, OSError) as err:
        print(f"fetch_corpus: {err}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fetch real C programs used as compiler inputs by the tests and benchmarks.

The SQLite amalgamation (~260k lines of real C) ships inside the npm package
better-sqlite3. This script fetches that package with `npm pack` at a pinned
version, checks its published sha512 integrity, and extracts sqlite3.c into
.cache/corpus/. Idempotent; nothing third-party is committed.

    python tools/fetch_corpus.py [--dest DIR]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "better-sqlite3@11.8.1"
INTEGRITY = ("sha512-9BxNaBkblMjhJW8sMRZxnxVTRgbRmssZW0Oxc1MPBTfiR+WW21e2Mk4qu8CzrcZb1LwPCnFs"
             "fDEzq+SNcBU8eg==")
MEMBER = "package/deps/sqlite3/sqlite3.c"
ROOT = Path(__file__).resolve().parent.parent


def integrity_of(path: Path) -> str:
    """npm's Subresource-Integrity string of a file."""
    digest = hashlib.sha512(path.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def fetch(dest: Path) -> Path:
    """Make sure dest/sqlite3.c exists; return its path."""
    target = dest / "sqlite3.c"
    if target.exists():
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed: cannot fetch " + PACKAGE)
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([npm, "pack", PACKAGE, "--silent"], cwd=tmp, check=True,
                             capture_output=True, text=True, timeout=600)
        tarball = Path(tmp) / out.stdout.strip().splitlines()[-1]
        got = integrity_of(tarball)
        if got != INTEGRITY:
            raise RuntimeError(f"{PACKAGE}: integrity {got} does not match the pinned "
                               f"{INTEGRITY}")
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

"""Fetch real C programs used as compiler inputs by the tests, benchmarks and
the train-to-deploy loop (mlbridge train inlining --method loop).

- The SQLite amalgamation (~260k lines of real C) ships inside the npm package
  better-sqlite3: fetched with `npm pack` at a pinned version, checked against
  its published sha512 integrity; sqlite3.c goes to .cache/corpus/.
- C libraries bundled in PyPI source distributions (lz4, Brotli, xxHash,
  zstd), fetched from files.pythonhosted.org at pinned versions and checked
  against pinned sha256 digests; their C library files go to
  .cache/corpus/<name>/ (the Python bindings are left out).
Idempotent; nothing third-party is committed.

    python tools/fetch_corpus.py [--dest DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from npm_package import fetch_package

PACKAGE = "better-sqlite3@11.8.1"
INTEGRITY = (
    "sha512-9BxNaBkblMjhJW8sMRZxnxVTRgbRmssZW0Oxc1MPBTfiR+WW21e2Mk4qu8CzrcZb1LwPCnFs"
    "fDEzq+SNcBU8eg=="
)
MEMBER = "package/deps/sqlite3/sqlite3.c"
ROOT = Path(__file__).resolve().parent.parent
PYPI = "https://files.pythonhosted.org/packages/"

#: name -> (sdist path under PYPI, sha256, member prefixes to extract). The
#: members keep their paths below the sdist's top directory.
SDISTS = {
    "lz4": (
        "a4/31/ec1259ca8ad11568abaf090a7da719616ca96b60d097ccc5799cd0ff599c/lz4-4.3.3.tar.gz",
        "01fe674ef2889dbb9899d8a67361e0c4a2c833af5aeb37dd505727cf5d2a131e",
        ("lz4libs/",),
    ),
    "brotli": (
        "2f/c2/f9e977608bdf958650638c3f1e28f85a1b075f075ebbe77db8555463787b/Brotli-1.1.0.tar.gz",
        "81de08ac11bcb85841e440c13611c00b67d3bf82698314928d0b676362546724",
        ("c/common/", "c/dec/", "c/enc/", "c/include/", "c/tools/brotli.c"),
    ),
    "xxhash": (
        "00/5e/d6e5258d69df8b4ed8c83b6664f2b47d30d2dec551a29ad72a6c69eafd31/xxhash-3.5.0.tar.gz",
        "84f2caddf951c9cbf8dc2e22a89d4ccf5d86391ac6418fe81e3c67d0cf60b45f",
        ("deps/xxhash/",),
    ),
    "zstd": (
        "ed/f6/2ac0287b442160a89d726b17a9184a4c615bb5237db763791a7fd16d9df1/"
        "zstandard-0.23.0.tar.gz",
        "b2d8c62d08e7255f68f7a740bae85b3c9b8e5466baa9cbf7f57f1cde0ac6bc09",
        ("zstd/",),
    ),
}


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


def fetch_sdist(name: str, dest: Path) -> Path:
    """Make sure dest/<name>/ holds the library's C files; return the dir."""
    path, sha256, prefixes = SDISTS[name]
    target = dest / name
    done = target / ".complete"
    if done.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        tarball = Path(tmp) / Path(path).name
        with urllib.request.urlopen(PYPI + path, timeout=300) as response:
            tarball.write_bytes(response.read())
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        if digest != sha256:
            raise RuntimeError(f"{tarball.name}: sha256 {digest}, expected {sha256}")
        with tarfile.open(tarball) as archive:
            for member in archive.getmembers():
                top, _, rest = member.name.partition("/")
                if not member.isfile() or not rest.startswith(prefixes) or ".." in rest:
                    continue
                out = target / rest
                out.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                if source is not None:
                    out.write_bytes(source.read())
    done.write_text("ok\n")
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=ROOT / ".cache" / "corpus")
    args = parser.parse_args()
    rc = 0
    try:
        print(fetch(args.dest))
    except (RuntimeError, subprocess.SubprocessError, OSError) as err:
        print(f"fetch_corpus: {err}", file=sys.stderr)
        rc = 1
    for name in SDISTS:
        try:
            print(fetch_sdist(name, args.dest))
        except (RuntimeError, OSError) as err:
            print(f"fetch_corpus: {name}: {err}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())

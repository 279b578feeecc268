"""Fetch a pinned npm package tarball with `npm pack` and check its integrity.

Shared by the set-up scripts that take third-party files from the npm
registry (nothing third-party is committed to the repository).
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path


def integrity_of(path: Path) -> str:
    """npm's Subresource-Integrity string (sha512) of a file."""
    digest = hashlib.sha512(path.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def fetch_package(spec: str, integrity: str, workdir: Path) -> Path:
    """`npm pack SPEC` into ``workdir``; check the tarball against the pinned
    ``integrity``; return its path. Raises RuntimeError on any mismatch."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is not installed: cannot fetch {spec}")
    out = subprocess.run(
        [npm, "pack", spec, "--silent"],
        cwd=workdir,
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tarball = workdir / out.stdout.strip().splitlines()[-1]
    got = integrity_of(tarball)
    if got != integrity:
        raise RuntimeError(f"{spec}: integrity {got} does not match the pinned {integrity}")
    return tarball

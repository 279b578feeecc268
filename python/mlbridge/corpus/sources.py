"""Getting a recipe project's sources: downloaded (Debian source packages
through ``apt-get source``) or copied (an archive), checked against the
recipe's SHA-256, and unpacked into a directory of their own.

Nothing here trusts the files: a ``.dsc`` must have the recipe's SHA-256
before anything it lists is used, every file it lists must have the SHA-256
the ``.dsc`` gives, and archives are unpacked only when every member is a
file, a directory or a link inside the tree, at a relative path without
``..`` (no devices, no setuid bits).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import Dict, List, Optional

from mlbridge.corpus.recipe import ArchiveSource, DebianSource
from mlbridge.corpus.steps import run_step
from mlbridge.errors import CorpusError

#: Longest a download or an unpack may take.
FETCH_TIMEOUT_S = 1800.0
#: Largest .dsc file read.
MAX_DSC_BYTES = 1 << 20
_DSC_FILE = re.compile(r"^ ([0-9a-f]{64}) ([0-9]+) ([A-Za-z0-9][A-Za-z0-9._+~-]*)$")


def sha256_file(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dsc_files(dsc: Path) -> Dict[str, str]:
    """The files a ``.dsc`` lists in its Checksums-Sha256 field, with their
    SHA-256 (names are plain file names)."""
    with open(dsc, "rb") as f:
        text = f.read(MAX_DSC_BYTES + 1)
    if len(text) > MAX_DSC_BYTES:
        raise CorpusError(f"{dsc}: larger than {MAX_DSC_BYTES} bytes")
    files: Dict[str, str] = {}
    in_field = False
    for line in text.decode("utf-8", "replace").splitlines():
        if line.startswith("Checksums-Sha256:"):
            in_field = True
            continue
        if in_field:
            match = _DSC_FILE.match(line)
            if match is None:
                in_field = line.startswith(" ")
                continue
            files[match.group(3)] = match.group(1)
    if not files:
        raise CorpusError(f"{dsc}: no Checksums-Sha256 field")
    return files


def _dsc_name(source: DebianSource) -> str:
    version = source.version.split(":", 1)[-1]  # the epoch is not in file names
    return f"{source.package}_{version}.dsc"


def fetch_debian(source: DebianSource, downloads: Path, log: Path) -> Path:
    """The checked ``.dsc`` of ``source`` in ``downloads`` (a directory of
    its own), downloaded with ``apt-get source --download-only`` unless a
    checked copy is there."""
    what = f"Debian source {source.package} {source.version}"
    downloads.mkdir(parents=True, exist_ok=True)
    dsc = downloads / _dsc_name(source)
    if not dsc.is_file():
        run_step(
            ["apt-get", "source", "--download-only", f"{source.package}={source.version}"],
            downloads,
            log,
            what + " (needs a deb-src entry: --install-build-deps writes them; docs/corpus.md)",
            FETCH_TIMEOUT_S,
        )
    if not dsc.is_file():
        raise CorpusError(f"{what}: apt-get did not download {dsc.name} (log: {log})")
    got = sha256_file(dsc)
    if got != source.dsc_sha256:
        raise CorpusError(
            f"{what}: {dsc.name} has SHA-256 {got}, the recipe says {source.dsc_sha256}"
        )
    for name, digest in dsc_files(dsc).items():
        path = downloads / name
        if not path.is_file() or sha256_file(path) != digest:
            raise CorpusError(f"{what}: {name} is missing or not the file {dsc.name} lists")
    return dsc


def unpack_debian(dsc: Path, into: Path, log: Path) -> None:
    """Unpacks a checked ``.dsc`` (with the package's patches) into ``into``,
    which must not exist."""
    run_step(
        ["dpkg-source", "--no-copy", "-x", str(dsc), str(into)],
        dsc.parent,
        log,
        f"unpacking {dsc.name}",
        FETCH_TIMEOUT_S,
    )


def _checked_members(archive: tarfile.TarFile, path: Path) -> List[tarfile.TarInfo]:
    """The members of ``archive``, refused (CorpusError) unless each is a
    directory, a regular file or a link that stays inside the tree, at a
    relative path without ``..``; modes lose setuid, setgid and sticky bits
    and gain owner read/write (what tarfile's ``data`` filter does, on every
    Python this package supports)."""
    members = []
    for member in archive.getmembers():
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts or "\0" in member.name:
            raise CorpusError(f"archive {path}: member {member.name!r} leaves its directory")
        if member.issym() or member.islnk():
            target = PurePosixPath(member.linkname)
            resolved = target if member.islnk() else name.parent / target
            if target.is_absolute() or ".." in _normalised(resolved).parts[:1]:
                raise CorpusError(
                    f"archive {path}: link {member.name!r} -> {member.linkname!r} "
                    "leaves its directory"
                )
        elif not (member.isfile() or member.isdir()):
            raise CorpusError(f"archive {path}: {member.name!r} is not a file or directory")
        member.mode = (member.mode & 0o777 & ~0o7000) | 0o600
        member.uid = member.gid = 0
        member.uname = member.gname = ""
        members.append(member)
    return members


def _normalised(path: PurePosixPath) -> PurePosixPath:
    """``path`` with ``.`` and ``x/..`` folded (a leading ``..`` stays)."""
    parts: List[str] = []
    for part in path.parts:
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            else:
                parts.append(part)
        elif part != ".":
            parts.append(part)
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def unpack_archive(source: ArchiveSource, into: Path) -> None:
    """Checks ``source``'s SHA-256 and unpacks it into ``into`` (created);
    a single top-level directory is stripped."""
    if not source.path.is_file():
        raise CorpusError(f"archive {source.path}: no such file")
    got = sha256_file(source.path)
    if got != source.sha256:
        raise CorpusError(f"archive {source.path}: SHA-256 {got}, the recipe says {source.sha256}")
    staging = into.with_name(into.name + ".unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        with tarfile.open(source.path) as archive:
            archive.extractall(staging, members=_checked_members(archive, source.path))
    except (tarfile.TarError, OSError) as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise CorpusError(f"archive {source.path}: cannot unpack: {err}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    entries = list(staging.iterdir())
    top: Optional[Path] = entries[0] if len(entries) == 1 and entries[0].is_dir() else None
    if top is not None:
        top.rename(into)
        staging.rmdir()
    else:
        staging.rename(into)

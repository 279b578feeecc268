"""Getting a recipe project's sources: downloaded (Debian source packages
through ``apt-get source``) or copied (an archive), checked against the
recipe's SHA-256, and unpacked into a directory of their own.

Nothing here trusts the files: a ``.dsc`` must have the recipe's SHA-256
before anything it lists is used, every file it lists must have the SHA-256
the ``.dsc`` gives, and archives are unpacked only when every member is a
file, a directory or a link inside the tree, at a relative path without
``..`` (no devices, no setuid bits). Members are written by file
descriptors, never through a symbolic link (an earlier member's link on the
way to a later member is refused): what the file system does, not only what
the names say, keeps every write inside the tree.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import Dict, List, Optional, Tuple

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
    directory, a regular file or a link, at a relative path without ``..``,
    a link's target relative and staying inside the tree as written."""
    members = []
    for member in archive.getmembers():
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts or "\0" in member.name:
            raise CorpusError(f"archive {path}: member {member.name!r} leaves its directory")
        if not _parts(member.name):
            continue  # "." or "./": the top directory itself
        if member.issym() or member.islnk():
            target = PurePosixPath(member.linkname)
            resolved = target if member.islnk() else name.parent / target
            if (
                target.is_absolute()
                or "\0" in member.linkname
                or ".." in _normalised(resolved).parts[:1]
            ):
                raise CorpusError(
                    f"archive {path}: link {member.name!r} -> {member.linkname!r} "
                    "leaves its directory"
                )
        elif not (member.isfile() or member.isdir()):
            raise CorpusError(f"archive {path}: {member.name!r} is not a file or directory")
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


def _parts(name: str) -> List[str]:
    """The components of a member's name, without ``.`` and empty ones."""
    return [part for part in name.split("/") if part not in ("", ".")]


class _Tree:
    """A directory being filled with an archive's members, walked by file
    descriptors: every component of every name is opened with
    ``O_NOFOLLOW``, so a symbolic link the archive made earlier is never
    followed (a name through one is refused), and files are created with
    ``O_EXCL`` (nothing is written through a name that already exists)."""

    def __init__(self, root: Path) -> None:
        self._root = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
        self._modes: List[Tuple[List[str], int, float]] = []

    def close(self) -> None:
        os.close(self._root)

    def _parent(self, parts: List[str], create: bool) -> int:
        """An open descriptor of the directory holding ``parts[-1]``."""
        fd = os.dup(self._root)
        try:
            for part in parts[:-1]:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
                child = os.open(part, flags, dir_fd=fd)
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise

    def add(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        """Creates ``member`` in the tree."""
        parts = _parts(member.name)
        parent = self._parent(parts, create=True)
        try:
            name = parts[-1]
            if member.isdir():
                try:
                    os.mkdir(name, 0o700, dir_fd=parent)
                except FileExistsError:
                    pass
                os.close(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent))
                self._modes.append((parts, (member.mode & 0o777) | 0o700, _mtime(member)))
            elif member.issym():
                os.symlink(member.linkname, name, dir_fd=parent)
                times = (_mtime(member), _mtime(member))
                os.utime(name, times, dir_fd=parent, follow_symlinks=False)
            elif member.islnk():
                target = _parts(member.linkname)
                if not target:
                    raise OSError(0, f"hard link {member.name!r} to the top directory")
                source = self._parent(target, create=False)
                try:
                    os.link(target[-1], name, src_dir_fd=source, dst_dir_fd=parent,
                            follow_symlinks=False)  # fmt: skip
                finally:
                    os.close(source)
            else:
                self._write(archive, member, name, parent)
        finally:
            os.close(parent)

    @staticmethod
    def _write(archive: tarfile.TarFile, member: tarfile.TarInfo, name: str, parent: int) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, 0o600, dir_fd=parent)
        with os.fdopen(fd, "wb") as out:
            data = archive.extractfile(member)
            if data is not None:
                shutil.copyfileobj(data, out, 1 << 20)
            # No setuid, setgid or sticky bits; the owner may read and write.
            os.fchmod(fd, (member.mode & 0o777) | 0o600)
            os.utime(fd, (_mtime(member), _mtime(member)))

    def finish(self) -> None:
        """Gives directories their modes and times, deepest first."""
        for parts, mode, mtime in sorted(self._modes, key=lambda m: -len(m[0])):
            parent = self._parent(parts, create=False)
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
                try:
                    os.fchmod(fd, mode)
                    os.utime(fd, (mtime, mtime))
                finally:
                    os.close(fd)
            finally:
                os.close(parent)


def _mtime(member: tarfile.TarInfo) -> int:
    """A member's modification time, within what every file system holds."""
    return min(max(int(member.mtime), 0), (1 << 32) - 1)


def _extract(archive: tarfile.TarFile, members: List[tarfile.TarInfo], into: Path) -> None:
    tree = _Tree(into)
    try:
        for member in members:
            tree.add(archive, member)
        tree.finish()
    finally:
        tree.close()


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
            _extract(archive, _checked_members(archive, source.path), staging)
    except (tarfile.TarError, OSError) as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise CorpusError(f"archive {source.path}: cannot unpack: {err}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    entries = list(staging.iterdir())
    alone = len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink()
    top: Optional[Path] = entries[0] if alone else None
    if top is not None:
        top.rename(into)
        staging.rmdir()
    else:
        staging.rename(into)

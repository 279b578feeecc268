"""Running a project's own build steps (configure scripts, Makefiles,
CMake and Meson files: upstream code) in a sandbox.

A step runs under bubblewrap (``bwrap``, Debian's ``bubblewrap``):

- **unprivileged**: started as root (the documented first build, which also
  runs ``apt-get build-dep``), the step runs as the build user (``nobody``
  unless told otherwise), with no supplementary groups, no capabilities and
  ``no_new_privs`` (a setuid program cannot give root back); the project's
  work directory belongs to that user while it builds and to the corpus
  directory's owner again afterwards. Started as another user, the step runs
  as that user in a user namespace of its own.
- **in its own work directory**: the whole file system is mounted read-only
  but the project's directory; ``/tmp``, ``/var/tmp``, ``/run`` and
  ``/dev/shm`` are empty, private, writable by the step (as ``/tmp`` is by
  anyone: configure scripts make their temporary files there) and gone with
  the step; a directory on the
  way to the work directory that the build user may not enter (``/root``) is
  replaced by an empty one holding only that way.
- **without network**: a network namespace of its own (a loopback device
  alone, nobody else's listening sockets).
- **with limits**: a deadline per step (its processes are killed with its
  PID namespace) and an address-space limit per process (``RLIMIT_AS``).
- **with an environment of its own**: ``PATH``, the locale and the
  compilers; nothing else of the caller's environment reaches it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from mlbridge.errors import CorpusError

#: The user upstream build steps run as when the build is started as root.
DEFAULT_BUILD_USER = "nobody"
#: Longest one configure or build step may take, by default (seconds).
DEFAULT_STEP_TIMEOUT_S = 3600.0
#: Largest address space of one process of a build step, by default.
DEFAULT_MEMORY_BYTES = 8 << 30
#: Directories every step sees empty and private.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/run", "/dev/shm")
#: Variables of the caller's environment a build step gets (if set).
KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SOURCE_DATE_EPOCH")


@dataclass(frozen=True)
class BuildLimits:
    """What a build step may use: seconds, bytes of address space per
    process, and the user it runs as when the build runs as root."""

    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    build_user: str = DEFAULT_BUILD_USER


@dataclass(frozen=True)
class BuildUser:
    """The identity a step runs as after dropping root: uid and gid."""

    uid: int
    gid: int


def build_user(limits: BuildLimits) -> Optional[BuildUser]:
    """The user build steps switch to (None: this process is not root, the
    steps keep its identity); CorpusError for an unknown user or root."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(limits.build_user)
    except KeyError:
        raise CorpusError(f"build user {limits.build_user!r}: no such user") from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise CorpusError(f"build user {limits.build_user!r} is root: name an unprivileged user")
    return BuildUser(entry.pw_uid, entry.pw_gid)


def bubblewrap() -> str:
    """The path of ``bwrap``, or CorpusError saying how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise CorpusError(
            "building a corpus runs the projects' build systems in a sandbox, which needs "
            "bubblewrap: apt-get install bubblewrap (scripts/setup installs it)"
        )
    return found


def environment(overrides: Mapping[str, str], home: Path) -> Dict[str, str]:
    """A step's whole environment: ``KEPT_VARIABLES`` of this process,
    ``HOME`` in the work directory, then ``overrides``."""
    env = {k: os.environ[k] for k in KEPT_VARIABLES if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = str(home)
    env.update(overrides)
    return env


def _searchable_by(path: Path, user: BuildUser) -> bool:
    """Whether ``user`` (no supplementary groups) may enter directory ``path``."""
    info = os.stat(path)
    if info.st_uid == user.uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == user.gid:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _mounts(
    writable: Sequence[Path], user: Optional[BuildUser], readable: Sequence[Path] = ()
) -> List[str]:
    """bwrap's file-system options: everything read-only, the private
    directories empty, a way to each ``writable`` and ``readable`` directory
    the build user may walk, and the ``writable`` ones writable."""
    covers = [Path(d) for d in PRIVATE_DIRS]
    if user is not None:
        for work in [*writable, *readable]:
            for directory in reversed(work.parents):  # "/" first
                if any(directory == c or c in directory.parents for c in covers):
                    break
                if not _searchable_by(directory, user):
                    covers.append(directory)
                    break
    options = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for cover in covers:
        # The private directories are the build's own, writable by it as
        # /tmp is by anyone; a directory covered on the way is not.
        private = str(cover) in PRIVATE_DIRS
        options += [*(["--perms", "01777"] if private else []), "--tmpfs", str(cover)]
    ways: List[Path] = []
    for work in [*writable, *readable]:
        hidden = [c for c in covers if c in work.parents]
        if hidden:
            deepest = max(hidden, key=lambda c: len(c.parts))
            ways += [d for d in reversed(work.parents) if deepest in d.parents and d not in ways]
    for directory in ways:
        options += ["--perms", "0755", "--dir", str(directory)]
    for seen in readable:
        options += ["--ro-bind", str(seen), str(seen)]
    for work in writable:
        options += ["--bind", str(work), str(work)]
    return options


def sandboxed(
    args: Sequence[str],
    writable: Sequence[Path],
    cwd: Path,
    limits: BuildLimits,
    user: Optional[BuildUser],
    readable: Sequence[Path] = (),
) -> List[str]:
    """The command that runs ``args`` in ``cwd`` inside the sandbox where
    only the ``writable`` directories (absolute, resolved, not one of the
    private ones) can be written; the ``readable`` ones (absolute, resolved)
    are seen read-only even under a directory the build user may not enter."""
    for work in [*writable, *readable]:
        if not work.is_absolute() or any(work == Path(d) for d in PRIVATE_DIRS):
            raise CorpusError(f"{work}: not a directory a build step may write")
    command = [bubblewrap(), "--die-with-parent", "--new-session"]
    if user is None:
        command += ["--unshare-all"]
    else:  # no user namespace: the switch below is to a real, unprivileged uid
        command += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        command += ["--unshare-cgroup-try", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    command += _mounts(writable, user, readable) + ["--chdir", str(cwd), "--"]
    if user is not None:
        command += [
            "setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups",
            "--inh-caps=-all", "--no-new-privs", "--",
        ]  # fmt: skip
    return command + _limited(list(args), limits)


def _limited(args: List[str], limits: BuildLimits) -> List[str]:
    """``args`` with the build's processes under the address-space limit.
    Under ``bear``, the limit goes on the build command bear runs, not on
    bear's own interceptor: that gRPC server, starved of address space for
    its threads, can deadlock once the build has ended."""
    limit = ["prlimit", f"--as={limits.memory_bytes}", "--"]
    if args[:1] == ["bear"] and "--" in args:
        cut = args.index("--") + 1
        return [*args[:cut], *limit, *args[cut:]]
    return [*limit, *args]


def hand_over(work: Path, owner: Tuple[int, int]) -> None:
    """Gives ``work`` and everything in it to ``owner`` (uid, gid), walking
    the tree by file descriptors without following symbolic links."""
    uid, gid = owner
    os.chown(work, uid, gid, follow_symlinks=False)
    for _, dirs, files, fd in os.fwalk(work, follow_symlinks=False):
        for name in dirs + files:
            try:
                os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                pass


__all__ = [
    "BuildLimits",
    "BuildUser",
    "DEFAULT_BUILD_USER",
    "DEFAULT_MEMORY_BYTES",
    "DEFAULT_STEP_TIMEOUT_S",
    "build_user",
    "environment",
    "hand_over",
    "sandboxed",
]

"""Opening a file a user named for output (a training log, statistics)
without trusting what is at that path: a symbolic link is not followed (it
could point at any file the user can write), a FIFO is not waited on (it
would block the command), and anything but a regular file is refused. The
C++ side does the same (src/support/OutputFile.h)."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO


def open_output_file(path: "os.PathLike[str] | str", append: bool = False) -> BinaryIO:
    """``path`` opened for writing in binary (truncated, or appended to),
    created with mode 0644; OSError naming why when it is a symbolic link, a
    FIFO, a directory or another non-regular file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise OSError(err.errno, "it is a symbolic link", str(path)) from None
        if err.errno == errno.ENXIO:
            raise OSError(err.errno, "it is a FIFO without a reader", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "ab" if append else "wb")
    except BaseException:
        os.close(fd)
        raise


def replace_file(path: "os.PathLike[str] | str", data: bytes, mode: int = 0o644) -> None:
    """Writes ``data`` to ``path`` atomically: a new file beside it, created
    exclusively (whatever was planted at any name there is never followed nor
    written) and synced, then renamed over ``path`` (a symbolic link at
    ``path`` is replaced, not followed)."""
    target = Path(path)
    fd, staging = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            os.fchmod(stream.fileno(), mode)
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(staging, target)
    except BaseException:
        try:
            os.unlink(staging)
        except OSError:
            pass
        raise


__all__ = ["open_output_file", "replace_file"]

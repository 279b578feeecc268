"""Reading a whole file a user named (a model, a checkpoint, a corpus's
JSON) without trusting what is at that path: it is opened once without
blocking (a FIFO would block the command), only a regular file is accepted
(``/dev/zero`` never ends), its size is checked against a budget before
anything is read, and the bytes come from the descriptor that was checked.
The C++ side does the same (src/support/ReadFile.h)."""

from __future__ import annotations

import os
import stat
from typing import Type

from mlbridge.errors import MlbridgeError


def read_regular_file(
    path: "os.PathLike[str] | str",
    max_bytes: int,
    error: Type[MlbridgeError] = MlbridgeError,
    follow_symlinks: bool = True,
) -> bytes:
    """The bytes of the regular file ``path``; ``error`` naming the path and
    why when it cannot be opened or read, is not a regular file (a FIFO, a
    device, a directory; with ``follow_symlinks`` false, a symbolic link),
    has more than ``max_bytes`` bytes, or grows while it is read."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags if follow_symlinks else flags | os.O_NOFOLLOW)
    except OSError as err:
        raise error(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: cannot read: not a regular file")
        if size > max_bytes:
            raise error(f"{path}: larger than {max_bytes} bytes ({size} bytes)")
        with open(fd, "rb", closefd=False) as file:
            # One byte more than its size: a file that grows while it is read shows.
            data = file.read(size + 1)
    except OSError as err:
        raise error(f"{path}: cannot read: {err.strerror or err}") from None
    finally:
        os.close(fd)
    if len(data) > size:
        raise error(f"{path}: cannot read: it grew while it was read")
    return data


__all__ = ["read_regular_file"]

"""Output paths an attacker (another local user, with ``fs.protected_*``
off) could plant where a compiler plugin writes its log: a FIFO that would
block the open, a symbolic link to a file of the victim's, a directory. The
plugin must refuse each (opened with O_NOFOLLOW | O_NONBLOCK, regular files
only), report it, and still compile."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Tuple

KINDS = ("fifo", "symlink", "directory")
VICTIM_TEXT = "#!/bin/sh\necho untouched\n"


def plant(tmp_path: Path, kind: str) -> Tuple[Path, Callable[[], None]]:
    """A planted ``kind`` at a fresh path, and a check that nothing was
    written through it."""
    path = tmp_path / f"planted-{kind}.log"
    victim = tmp_path / "victim.sh"
    victim.write_text(VICTIM_TEXT)
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "symlink":
        path.symlink_to(victim)
    else:
        path.mkdir()

    def unchanged() -> None:
        assert victim.read_text() == VICTIM_TEXT
        assert path.is_symlink() if kind == "symlink" else True
        if kind == "directory":
            assert list(path.iterdir()) == []

    return path, unchanged

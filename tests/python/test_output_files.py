"""Files a user names for output (``--log``, ``--stats-json``, the loop's
logs) are opened without following a planted symbolic link and without
blocking on a planted FIFO; anything but a regular file is refused."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hostile_paths import KINDS, plant

from mlbridge.output_files import open_output_file


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_path_is_refused(tmp_path, kind):
    path, unchanged = plant(tmp_path, kind)
    with pytest.raises(OSError) as raised:
        open_output_file(path)
    assert str(path) in str(raised.value)
    unchanged()


def test_a_fifo_with_a_reader_is_refused_too(tmp_path):
    """Opened without O_NONBLOCK, the open would wait for a reader: with
    one, it succeeds, and only the file's type tells it apart."""
    path, unchanged = plant(tmp_path, "fifo")
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OSError, match="not a regular file"):
            open_output_file(path)
    finally:
        os.close(reader)
    unchanged()


def test_a_regular_file_is_truncated_or_appended_to(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"old\n")
    with open_output_file(path, append=True) as out:
        out.write(b"more\n")
    assert path.read_bytes() == b"old\nmore\n"
    with open_output_file(path) as out:
        out.write(b"new\n")
    assert path.read_bytes() == b"new\n"


@pytest.mark.parametrize("kind", KINDS)
def test_serve_refuses_a_planted_log(tmp_path, kind):
    path, unchanged = plant(tmp_path, kind)
    os.chmod(tmp_path, 0o700)
    command = [sys.executable, "-m", "mlbridge", "serve", "--pipe", str(tmp_path / "ch")]
    command += ["--create", "--problem", "inlining", "--policy", "default", "--log", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"--log {path}: cannot write" in done.stderr, done.stderr
    unchanged()

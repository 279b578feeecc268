"""Checks on this test process's children and resources, shared by the
environment tests: no compiler or service may outlive its episode."""

from __future__ import annotations

import os
import time


def children():
    """Pids of this process's child processes (but multiprocessing's
    resource tracker, which a process pool leaves for the session)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if int(fields[1]) == me and b"multiprocessing" not in command:
            found.append(int(entry))
    return found


def wait_for(condition, seconds=30.0):
    """Polls ``condition`` until it holds or ``seconds`` passed; its last value."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def gone(pid):
    """Whether no process ``pid`` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def dead(pid):
    """Whether process ``pid`` has ended: gone, or a zombie not yet reaped."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


def open_fds():
    """Number of this process's open file descriptors."""
    return len(os.listdir("/proc/self/fd"))

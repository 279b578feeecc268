"""One step of building a corpus (a download, an unpack, a configure, a
build): a :func:`mlbridge.session.run_tool` command (it dies with this
process), its output appended to a log file (never through a symbolic link),
under a deadline; a step that fails is a CorpusError naming its log."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Mapping, Optional, Sequence

from mlbridge.errors import CorpusError
from mlbridge.output_files import open_output_file
from mlbridge.session import ToolError, run_tool


def run_step(
    args: Sequence[str],
    cwd: Path,
    log: Path,
    what: str,
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
) -> None:
    """Runs ``args`` in ``cwd``, output appended to ``log``; CorpusError
    saying ``what`` failed when it cannot start, exits non-zero or runs
    longer than ``timeout`` seconds (its process group is then killed)."""
    try:
        stream = open_output_file(log, append=True)
    except OSError as err:
        raise CorpusError(f"{what}: cannot write its log {log}: {err.strerror or err}") from None
    with stream as out:
        out.write(f"$ (cd {cwd} && {' '.join(args)})\n".encode())
        out.flush()
        try:
            run_tool(args, timeout=timeout, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        except ToolError as err:
            if err.timed_out:
                raise CorpusError(f"{what}: no result after {timeout:.0f} s (log: {log})") from None
            if err.returncode is None:
                raise CorpusError(f"{what}: {err}") from None
            raise CorpusError(
                f"{what}: {args[0]} exited with {err.returncode} (log: {log})"
            ) from None

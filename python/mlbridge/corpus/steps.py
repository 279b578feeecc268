"""One step of building a corpus (a download, an unpack, a configure, a
build): a child of :mod:`mlbridge.child_process` (it dies with this
process), its output appended to a log file (never through a symbolic link),
under a deadline; a step that fails is a CorpusError naming its log."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Mapping, Optional, Sequence

from mlbridge import child_process
from mlbridge.errors import CorpusError
from mlbridge.output_files import open_output_file


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
            result = child_process.run(
                list(args),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise CorpusError(f"{what}: no result after {timeout:.0f} s (log: {log})") from None
        except OSError as err:
            raise CorpusError(f"{what}: cannot run {args[0]}: {err.strerror or err}") from None
    if result.returncode != 0:
        raise CorpusError(f"{what}: {args[0]} exited with {result.returncode} (log: {log})")

"""A one-shot command (a compiler, an LLVM tool, a build step, a compiled
program) run to its end under a deadline, every failure one error.

:func:`run_tool` is :func:`mlbridge.child_process.run` (the child dies with
this process, its process group is killed on a timeout or any exception)
with what every caller checked by hand: a command that cannot start, runs
past ``timeout`` or exits non-zero raises :class:`ToolError` (or the
caller's error class), whose message names the command and ends with the
end of its stderr; the error keeps the exit status, the stderr and whether
it timed out.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Type, Union

from mlbridge import child_process
from mlbridge.errors import MlbridgeError

__all__ = ["STDERR_TAIL", "ToolError", "run_tool"]

#: Characters of a failed command's stderr its error message ends with.
STDERR_TAIL = 1500


class ToolError(MlbridgeError):
    """A command that could not start, ran past its deadline or failed."""

    def __init__(
        self,
        message: str,
        *,
        command: Sequence[str] = (),
        returncode: Optional[int] = None,
        stderr: str = "",
        timed_out: bool = False,
    ) -> None:
        super().__init__(message)
        self.command = list(command)
        #: The exit status (None: it did not start, or timed out).
        self.returncode = returncode
        #: Its stderr, when captured (text).
        self.stderr = stderr
        self.timed_out = timed_out


def _error(error: Type[Exception], message: str, **details: Any) -> Exception:
    if isinstance(error, type) and issubclass(error, ToolError):
        return error(message, **details)
    return error(message)


def run_tool(
    command: Sequence[Union[str, Path]],
    *,
    timeout: float,
    what: Optional[str] = None,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.PIPE,
    input: Optional[str] = None,
    cwd: Optional[Path] = None,
    env: Optional[Mapping[str, str]] = None,
    tail: int = STDERR_TAIL,
    error: Type[Exception] = ToolError,
) -> "subprocess.CompletedProcess[str]":
    """Runs ``command`` with its output as text (``stdout`` and ``stderr``
    captured by default; a file or :data:`subprocess.STDOUT` as in
    :func:`subprocess.run`), ``input`` on its stdin (default: closed),
    in ``cwd`` with ``env`` (default: this process's without the plugins'
    variables). Returns the completed process when it exits 0; otherwise
    raises ``error`` (:class:`ToolError` by default) saying that ``what``
    (default: the command's name) could not start, ran longer than
    ``timeout`` seconds or failed, with the last ``tail`` characters of its
    captured stderr."""
    args = [str(part) for part in command]
    name = what or args[0]
    try:
        done = child_process.run(
            args,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd,
            env=None if env is None else dict(env),
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as err:
        captured = err.stderr or b""
        text = captured.decode("utf-8", "replace") if isinstance(captured, bytes) else captured
        raise _error(
            error,
            f"{name} ran longer than {timeout:g} s",
            command=args,
            stderr=text,
            timed_out=True,
        ) from None
    except OSError as err:
        raise _error(error, f"cannot run {name}: {err.strerror or err}", command=args) from None
    if done.returncode != 0:
        text = done.stderr or ""
        message = f"{name} failed ({done.returncode})"
        if text.strip():
            message += f": {text.strip()[-tail:]}"
        raise _error(error, message, command=args, returncode=done.returncode, stderr=text)
    return done

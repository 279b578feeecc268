"""How the ``mlbridge`` and ``mlbridge-aot`` commands fail: exit codes and one-line errors.

Every failure of a command is one line on stderr, ``PROG: error: MESSAGE``
(``PROG`` is ``mlbridge COMMAND`` or ``mlbridge-aot``), and one of the exit
codes below; never a traceback, unless ``MLBRIDGE_DEBUG=1`` is set in the
environment (then the traceback comes first, the one line last). docs/cli.md
documents the codes and every known failure.

A command raises :class:`CommandError` (or calls :func:`fail`) for a failure it
understands; :func:`run_command` maps everything else: mlbridge's own errors
to :data:`FAILURE`, a missing Python module to :data:`ENVIRONMENT`, ``OSError``
to one line naming the file, Ctrl-C to :data:`INTERRUPTED`, SIGTERM to
:data:`TERMINATED` (cleanups run in both cases) and any other exception to
:data:`INTERNAL`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from types import FrameType
from typing import Any, Callable, NoReturn, Optional, TextIO, Tuple

from mlbridge.errors import MlbridgeError

#: Success.
OK = 0
#: A runtime failure: the compiler, the model or the peer failed, a timeout
#: expired, a file could not be read or written, an input is malformed.
FAILURE = 1
#: A usage error: bad arguments (argparse's own convention), a ``--policy``
#: that names no usable policy, an address or path that cannot be used.
USAGE = 2
#: The policy failed while deciding: it raised, or its answer was unusable.
POLICY_FAILED = 3
#: The environment lacks something: a tool (clang-19...), the plugin, a
#: Python package (onnxruntime, onnx, grpcio) or generated module.
ENVIRONMENT = 4
#: A bug in mlbridge: an exception nobody expected (sysexits' EX_SOFTWARE).
INTERNAL = 70
#: Interrupted by Ctrl-C (SIGINT): 128 + 2, as a shell reports it.
INTERRUPTED = 130
#: Stopped by SIGTERM: 128 + 15, as a shell reports it.
TERMINATED = 143

#: Set to 1 to get tracebacks before the one-line errors.
DEBUG_VARIABLE = "MLBRIDGE_DEBUG"

#: Longest message printed (an exception may carry a whole file).
_MAX_MESSAGE_CHARS = 2000


class CommandError(Exception):
    """A failure a command understands: one line ``message``, exit ``code``."""

    def __init__(self, message: str, code: int = FAILURE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Terminated(BaseException):
    """SIGTERM arrived (raised in the main thread so that cleanups run)."""


def fail(message: str, code: int = FAILURE) -> NoReturn:
    """End the running command with one error line and ``code``."""
    raise CommandError(message, code)


def one_line(text: str) -> str:
    """``text`` as one printable line: every control character (line breaks
    included) escaped as ``\\uXXXX`` (a model's or a file's bytes may hold
    any, and a terminal must not interpret them), long messages shortened."""
    printable = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in str(text).strip())
    if len(printable) > _MAX_MESSAGE_CHARS:
        printable = printable[:_MAX_MESSAGE_CHARS] + "..."
    return printable


def describe_os_error(err: OSError) -> str:
    """An ``OSError`` as Unix tools say it: ``FILE: reason`` (``reason`` alone
    when no file is known)."""
    reason = err.strerror or str(err) or type(err).__name__
    if err.filename is None:
        return reason
    if err.filename2 is not None:
        return f"{err.filename} -> {err.filename2}: {reason}"
    return f"{err.filename}: {reason}"


def debugging() -> bool:
    """True when ``MLBRIDGE_DEBUG=1``: print tracebacks too."""
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def report(prog: str, message: str, kind: str = "error", stream: Optional[TextIO] = None) -> None:
    """Print ``PROG: KIND: MESSAGE`` as one line on stderr."""
    print(f"{prog}: {kind}: {one_line(message)}", file=stream or sys.stderr, flush=True)


def warn(prog: str, message: str) -> None:
    """Print ``PROG: warning: MESSAGE`` as one line on stderr."""
    report(prog, message, "warning")


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line ``PROG: error: MESSAGE`` and exit :data:`USAGE`.

    Subparsers made by :meth:`add_subparsers` are of this class too.
    """

    def error(self, message: str) -> NoReturn:
        report(self.prog, f"{message} (see '{self.prog} --help')")
        raise SystemExit(USAGE)


def _classify(err: BaseException) -> Tuple[str, int]:
    """The one-line message and exit code of an exception escaping a command."""
    if isinstance(err, CommandError):
        return err.message, err.code
    if isinstance(err, ModuleNotFoundError):
        return (
            f"a Python module is missing: {err} (is mlbridge fully installed, "
            f"with the extra this command needs?)",
            ENVIRONMENT,
        )
    if isinstance(err, MlbridgeError):
        return str(err) or type(err).__name__, FAILURE
    if isinstance(err, OSError):
        return describe_os_error(err), FAILURE
    return (
        f"internal error: {type(err).__name__}: {err} (a bug in mlbridge: please "
        f"report it; {DEBUG_VARIABLE}=1 shows the traceback)",
        INTERNAL,
    )


def _quiet_stdout() -> None:
    """Point stdout at /dev/null (the reader went away: nothing more to say)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    raise Terminated()


def _thread_hook(prog: str) -> Callable[[Any], None]:
    """A ``threading.excepthook`` printing one line instead of a traceback."""

    def hook(args: Any) -> None:
        if args.exc_type is SystemExit:
            return
        if debugging():
            traceback.print_exception(args.exc_type, args.exc_value, args.exc_traceback)
        name = getattr(args.thread, "name", "a thread")
        message, _ = _classify(args.exc_value or args.exc_type())
        report(prog, f"in {name}: {message}")

    return hook


def run_command(prog: str, fn: Callable[[], int]) -> int:
    """Run ``fn`` (a command returning its exit code) so that it fails cleanly.

    Every exception becomes one line on stderr and its exit code (see the
    module documentation); Ctrl-C and SIGTERM unwind the command first, so
    that its cleanups run (FIFOs removed, the compiler terminated). A
    ``BrokenPipeError`` (``mlbridge log dump F | head``) ends quietly with
    :data:`FAILURE`. Returns the exit code.
    """
    in_main = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _on_sigterm) if in_main else None
    old_hook = threading.excepthook
    threading.excepthook = _thread_hook(prog)
    try:
        try:
            return fn()
        finally:
            if old_term is not None:
                signal.signal(signal.SIGTERM, old_term)
    except KeyboardInterrupt:
        return INTERRUPTED
    except Terminated:
        return TERMINATED
    except BrokenPipeError:
        _quiet_stdout()
        return FAILURE
    except Exception as err:  # noqa: BLE001 - the one place every failure ends
        if debugging():
            traceback.print_exc()
        message, code = _classify(err)
        report(prog, message)
        return code
    finally:
        threading.excepthook = old_hook


__all__ = [
    "ArgumentParser",
    "CommandError",
    "DEBUG_VARIABLE",
    "ENVIRONMENT",
    "FAILURE",
    "INTERNAL",
    "INTERRUPTED",
    "OK",
    "POLICY_FAILED",
    "TERMINATED",
    "Terminated",
    "USAGE",
    "debugging",
    "describe_os_error",
    "fail",
    "one_line",
    "report",
    "run_command",
    "warn",
]

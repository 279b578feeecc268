"""The compiler-session layer: how the package runs a compiler.

- :class:`CompilerSession` / :func:`run_session` (:mod:`.process`): a
  compiler that runs while something serves it (the decisions it asks over
  a channel) or for a whole training episode: process group, deadline,
  stderr kept, stopped on every exit path;
- :func:`run_tool` (:mod:`.tool`): a one-shot command (a compile, an LLVM
  tool, a build step, a compiled program) to its end under a deadline, any
  failure one :class:`ToolError`.

Both start their children with :mod:`mlbridge.child_process` (they die with
this process, and get none of the plugins' variables the user set).
"""

from mlbridge.session.process import (
    KILL_GRACE_SECONDS,
    STDERR_KEEP,
    CompilerSession,
    SessionResult,
    exit_message,
    run_session,
)
from mlbridge.session.tool import STDERR_TAIL, ToolError, run_tool

__all__ = [
    "KILL_GRACE_SECONDS",
    "STDERR_KEEP",
    "STDERR_TAIL",
    "CompilerSession",
    "SessionResult",
    "ToolError",
    "exit_message",
    "run_session",
    "run_tool",
]

"""Making LLVM IR that the ML inliner can work on (pitfall #2).

``clang -O0`` (even with ``-disable-O0-optnone``) marks every function
``noinline``, so the inliner would ask nothing. IR for inliner experiments is
made with ``-O1 -Xclang -disable-llvm-passes``: unoptimised, but inlinable.
"""

from __future__ import annotations

from typing import Sequence

from mlbridge.errors import MlbridgeError
from mlbridge.session import run_tool

INLINER_IR_FLAGS = ("-O1", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S")
#: Longest one compilation to IR may take.
TIMEOUT = 600.0


class CompileError(MlbridgeError):
    """A helper compilation failed."""


def make_inliner_ir(
    source: str, output: str, clang: str = "clang-19", extra_args: Sequence[str] = ()
) -> str:
    """Compile the C/C++ file ``source`` to inlinable textual IR at ``output``."""
    command = [clang, *INLINER_IR_FLAGS, *extra_args, "-c", source, "-o", output]
    run_tool(command, timeout=TIMEOUT, what=" ".join(command), error=CompileError)
    return output

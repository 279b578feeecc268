"""Making LLVM IR that the ML inliner can work on (pitfall #2).

``clang -O0`` (even with ``-disable-O0-optnone``) marks every function
``noinline``, so the inliner would ask nothing. IR for inliner experiments is
made with ``-O1 -Xclang -disable-llvm-passes``: unoptimised, but inlinable.
"""

from __future__ import annotations

import subprocess
from typing import Sequence

from mlbridge import child_process
from mlbridge.errors import MlbridgeError

INLINER_IR_FLAGS = ("-O1", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S")


class CompileError(MlbridgeError):
    """A helper compilation failed."""


def make_inliner_ir(
    source: str, output: str, clang: str = "clang-19", extra_args: Sequence[str] = ()
) -> str:
    """Compile the C/C++ file ``source`` to inlinable textual IR at ``output``."""
    command = [clang, *INLINER_IR_FLAGS, *extra_args, "-c", source, "-o", output]
    done = child_process.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        raise CompileError(
            f"{' '.join(command)} failed (rc {done.returncode}):\n{done.stderr.strip()}"
        )
    return output

"""Compiler command lines: which LLVM tool, and where the advisor flags go."""

from __future__ import annotations

import os
from typing import List, Sequence


def compiler_kind(argv0: str) -> str:
    """ "clang" for clang drivers (clang, clang-19, clang++...), else "llvm-tool".

    LLVM tools (opt, llc...) take LLVM options directly; clang needs each one
    behind ``-mllvm``.
    """
    return "clang" if os.path.basename(argv0).startswith("clang") else "llvm-tool"


def with_llvm_options(command: Sequence[str], options: Sequence[str]) -> List[str]:
    """``command`` with LLVM ``options`` inserted after the program name.

    For clang each option is preceded by ``-mllvm``.
    """
    if not command:
        raise ValueError("empty compiler command")
    command = list(command)
    if compiler_kind(command[0]) == "clang":
        inserted = [part for option in options for part in ("-mllvm", option)]
    else:
        inserted = list(options)
    return command[:1] + inserted + command[1:]

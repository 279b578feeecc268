"""``mlbridge demo``: the bundled demo (docs/cli.md)."""

from __future__ import annotations

import argparse
from typing import Any

from mlbridge.cli.arguments import (
    require_executable,
)

#: The command's name and its group in ``mlbridge --help``.
NAME = "demo"
GROUP = "setup"


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge demo`` to the subcommands ``sub``."""
    demo = sub.add_parser(
        "demo",
        help="compile bundled C programs with clang-19 -Oz "
        "whose inlining a bundled Python policy decides",
    )
    demo.add_argument("--keep", help="keep the build files in this directory")


def run(args: argparse.Namespace) -> int:
    from mlbridge.demo.run import run_demo

    require_executable("clang-19", "the tool", " (Debian: apt-get install clang-19)")
    return run_demo(keep=args.keep)

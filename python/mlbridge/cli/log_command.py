"""``mlbridge log dump FILE``: print a training log as text (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mlbridge.cli_errors import fail

#: The command's name and its group in ``mlbridge --help``.
NAME = "log"
GROUP = "data"


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge log`` to the subcommands ``sub``."""
    log = sub.add_parser("log", help="training logs")
    log_sub = log.add_subparsers(dest="log_command", required=True)
    dump = log_sub.add_parser("dump", help="print a training log as text")
    dump.add_argument("file")


def run(args: argparse.Namespace) -> int:
    from mlbridge.errors import TrainingLogError
    from mlbridge.training_log import dump

    try:
        dump(args.file, sys.stdout)
    except TrainingLogError as err:
        fail(f"{args.file} is not a valid training log: {err}")
    return 0

"""The ``mlbridge`` command.

::

    mlbridge llvm --problem inlining --policy default [--log FILE] [--stats-json FILE]
                  [--timeout S] [--llvm N] -- clang-19 -Oz -c f.c
    mlbridge wrap --out DIR --pipeline TEXT | --runner CONFIG [--level -Oz] [--llvm N]
    mlbridge serve --pipe BASE --policy POLICY [--create] [--max-requests N]
    mlbridge drive --grpc ADDRESS --policy POLICY
    mlbridge train TASK [...] | mlbridge evaluate PROBLEM --policy FILE [--split S]
    mlbridge validate PROBLEM --policy FILE --corpus DIR [--reference -O0] [--jobs N]
    mlbridge corpus build --recipe NAME|FILE --out DIR | packages --recipe R | info CORPUS
                    | generate csmith|llvm-stress --count N --seed S --out DIR
    mlbridge log dump FILE
    mlbridge config [--prefix | --plugin | --phase-service | --deploy-replay |
                     --interactive-host | --cmake-dir | --libdir | --includedir |
                     --components | --llvm-major | --llvm-majors | --json] [--llvm N]
    mlbridge --version

Every failure is one line ``mlbridge COMMAND: error: MESSAGE`` on stderr and a
documented exit code (docs/cli.md, :mod:`mlbridge.cli_errors`).

Each subcommand is one module (``mlbridge.cli.NAME_command``) with its
parser and handler;
:data:`COMMANDS` lists them, by group, in the order of ``mlbridge --help``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from mlbridge import __version__
from mlbridge.cli import (
    config_command,
    corpus_command,
    drive_command,
    evaluate_command,
    llvm_command,
    log_command,
    serve_command,
    train_command,
    validate_command,
    wrap_command,
)
from mlbridge.cli_errors import ArgumentParser, run_command

__all__ = ["COMMANDS", "GROUPS", "main"]

#: The groups of ``mlbridge --help``, in order.
GROUPS = {
    "use": "use a policy in a compiler",
    "learn": "train and measure",
    "data": "corpora and logs",
    "setup": "the installation",
}


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, group, parser and handler."""

    name: str
    group: str
    add_parser: Callable[[Any], None]
    run: Callable[[argparse.Namespace], int]


#: Every subcommand, in the order of ``mlbridge --help``.
COMMANDS: List[Command] = [
    Command(m.NAME, m.GROUP, m.add_parser, m.run)
    for m in (
        llvm_command,
        wrap_command,
        serve_command,
        drive_command,
        train_command,
        evaluate_command,
        validate_command,
        corpus_command,
        log_command,
        config_command,
    )
]


def _grouped_help(sub: Any) -> str:
    """The subcommands' one-line helps, by group."""
    helps: Dict[str, str] = {a.dest: a.help or "" for a in sub._choices_actions}
    lines = []
    for group, title in GROUPS.items():
        lines.append(f"{title}:")
        for command in COMMANDS:
            if command.group == group:
                lines.append(f"  {command.name:10} {helps.get(command.name, '')}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="mlbridge",
        description=(__doc__ or "").split("::")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mlbridge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    parser.epilog = _grouped_help(sub)
    # The groups list the commands: argparse's own list would repeat them.
    sub._choices_actions = []
    return parser


def _command_name(args: argparse.Namespace) -> str:
    """``mlbridge COMMAND`` (``mlbridge log dump``...), the prefix of its errors."""
    words = ["mlbridge", args.command]
    sub = getattr(args, f"{args.command}_command", None)
    if isinstance(sub, str):
        words.append(sub)
    return " ".join(words)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``mlbridge`` command; returns the exit code (docs/cli.md).

    Every failure is one line ``mlbridge COMMAND: error: MESSAGE`` on stderr
    (:func:`mlbridge.cli_errors.run_command`); usage errors exit 2 from here.
    """
    args = _parser().parse_args(argv)
    handler = {command.name: command.run for command in COMMANDS}[args.command]
    return run_command(_command_name(args), lambda: handler(args))

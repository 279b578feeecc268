"""``mlbridge loop``: train to deploy on clang (docs/loop.md)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from mlbridge.cli.arguments import (
    count,
    natural,
    require_executable,
)
from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail
from mlbridge.llvm.versions import add_llvm_argument

#: The command's name and its group in ``mlbridge --help``.
NAME = "loop"
GROUP = "learn"


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge loop`` to the subcommands ``sub``."""
    loop = sub.add_parser(
        "loop",
        help="train-to-deploy on clang: collect, train, "
        "export, AOT-compile, deploy through the plugin, measure, "
        "search for smaller code",
    )
    loop.add_argument("--out", default="loop-out", help="results directory")
    loop.add_argument(
        "--quick", action="store_true", help="small programs only (minutes -> seconds)"
    )
    loop.add_argument(
        "--es-iterations",
        type=natural,
        default=8,
        help="evolution-strategies iterations (0: skip the search)",
    )
    loop.add_argument(
        "--plugin",
        help="mlbridge-inline-advisor-llvmN.so (default: mlbridge config --plugin --llvm N)",
    )
    add_llvm_argument(loop, "of clang (default: the newest with mlbridge parts installed)")
    loop.add_argument(
        "--corpus",
        metavar="PATH",
        help="your programs: a directory of .c/.bc/.ll files (each top-level file "
        "and each subdirectory of them is one program), a compile_commands.json, "
        "or an MLGO corpus (corpus_description.json) (default: $MLBRIDGE_CORPUS, "
        "else ./.cache/corpus; see docs/corpus.md)",
    )
    loop.add_argument("--jobs", type=count, default=2, help="parallel compilations")
    loop.add_argument(
        "--repeats",
        type=count,
        default=1,
        help="rounds of deployment measurements (compile time: fastest)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mlbridge.llvm.versions import tools
    from mlbridge.loop.run import run_loop, summary_markdown
    from mlbridge.native import NativeError, plugin_path

    if args.corpus and not os.path.exists(args.corpus):
        fail(f"--corpus {args.corpus}: no such file or directory", USAGE)
    compilers = tools(args.llvm)
    for tool in (compilers.clang, "c++"):
        require_executable(tool, "the tool", " (scripts/setup installs it)")
    try:
        plugin = Path(args.plugin) if args.plugin else plugin_path(llvm=compilers.major)
    except NativeError as err:
        raise CommandError(
            f"{err} (give --plugin, or see 'mlbridge config --help')", ENVIRONMENT
        ) from None
    if not plugin.is_file():
        fail(
            f"the plugin {plugin} does not exist (build it: scripts/setup, or give --plugin)",
            ENVIRONMENT,
        )
    results = run_loop(
        Path(args.out),
        plugin=plugin,
        corpus=Path(args.corpus) if args.corpus else None,
        quick=args.quick,
        es_iterations=args.es_iterations,
        jobs=args.jobs,
        repeats=args.repeats,
        llvm=compilers.major,
    )
    print(summary_markdown(results))
    return 0

"""``mlbridge corpus``: corpora built from recipes (docs/corpus.md).

::

    mlbridge corpus build --recipe NAME|FILE --out DIR [--jobs N] [--only A,B]
                          [--install-build-deps] [--no-progress] [--build-user NAME]
                          [--step-timeout S] [--memory-limit MIB]
    mlbridge corpus packages --recipe NAME|FILE     (Debian source packages)
    mlbridge corpus info DIR|FILE                   (programs per project and split)
    mlbridge corpus generate csmith|llvm-stress --count N --seed S --out DIR [--no-progress]
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from mlbridge.cli.arguments import add_sandbox_arguments, natural, sandbox_limits
from mlbridge.cli.progress import progress_bar
from mlbridge.cli_errors import USAGE, CommandError, fail

NAME = "corpus"
GROUP = "data"


def add_parser(sub: Any) -> None:
    """Adds ``corpus`` to the ``mlbridge`` subcommands."""
    corpus = sub.add_parser("corpus", help="build a corpus from a recipe, or describe one")
    actions = corpus.add_subparsers(dest="corpus_command", required=True)
    build = actions.add_parser(
        "build",
        help="fetch, check and build the projects of a recipe (resumes where it stopped)",
    )
    build.add_argument("--recipe", required=True, help="a recipe file or a shipped recipe's name")
    build.add_argument("--out", required=True, help="the corpus directory")
    build.add_argument("--jobs", type=natural, default=2, help="build jobs (default: 2)")
    build.add_argument("--only", help="comma-separated project names (default: all)")
    build.add_argument(
        "--install-build-deps",
        action="store_true",
        help="first run apt-get build-dep for the recipe's Debian packages, adding deb-src "
        "entries made from APT's deb ones if it has none (root)",
    )
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_sandbox_arguments(build)
    packages = actions.add_parser("packages", help="print the Debian source packages of a recipe")
    packages.add_argument("--recipe", required=True, help="a recipe file or shipped name")
    generate = actions.add_parser(
        "generate",
        help="generate programs (csmith's runnable C, llvm-stress's IR), the same for a seed",
    )
    generate.add_argument("generator", choices=("csmith", "llvm-stress"), help="the generator")
    generate.add_argument("--count", type=natural, required=True, help="how many programs")
    generate.add_argument("--seed", type=natural, default=0, help="the corpus's seed (default 0)")
    generate.add_argument("--out", required=True, help="the corpus directory (resumes there)")
    generate.add_argument("--no-progress", action="store_true", help="no progress bar")
    info = actions.add_parser("info", help="programs per project and split of a corpus")
    info.add_argument("corpus", help="a corpus directory or file (any format of docs/corpus.md)")


def _build(args: argparse.Namespace) -> int:
    from mlbridge.corpus.builder import build_corpus, install_build_dependencies
    from mlbridge.corpus.recipe import read_recipe

    recipe = read_recipe(args.recipe)
    out = Path(args.out)
    only = [name for name in args.only.split(",") if name] if args.only else None
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.install_build_deps:
        out.mkdir(parents=True, exist_ok=True)
        install_build_dependencies(recipe, out / "build-deps.log")
    limits = sandbox_limits(args)
    report = build_corpus(recipe, out, args.jobs, only, not args.no_progress, limits=limits)
    units = sum(p.translation_units for p in report.projects)
    print(
        f"{len(report.projects)} projects ({len(report.built)} built now), "
        f"{units} translation units: {out}"
    )
    if report.failed:
        for name, why in sorted(report.failed.items()):
            print(f"failed: {name}: {why}", file=sys.stderr)
        raise CommandError(f"{len(report.failed)} of the recipe's projects failed to build")
    return 0


def _packages(args: argparse.Namespace) -> int:
    from mlbridge.corpus.recipe import read_recipe

    print(" ".join(read_recipe(args.recipe).debian_packages()))
    return 0


def _info(args: argparse.Namespace) -> int:
    from mlbridge.corpus.load import load_corpus

    programs = load_corpus(Path(args.corpus))
    per_project = Counter((p.project, p.split) for p in programs)
    for (project, split), count in sorted(per_project.items(), key=lambda i: (i[0][1], i[0][0])):
        print(f"{split:10} {project:32} {count:6}")
    splits = Counter(p.split for p in programs)
    print(", ".join(f"{split}: {count}" for split, count in sorted(splits.items())))
    return 0


def _generate(args: argparse.Namespace) -> int:
    from mlbridge.corpus.generated import generate_corpus

    if args.count < 1:
        fail("--count must be at least 1", USAGE)
    bar = progress_bar(args.count, args.generator, "program", not args.no_progress)

    def progress(done: int, count: int) -> None:
        if bar is not None:
            bar.update(done - bar.n)

    try:
        manifest = generate_corpus(
            args.generator, Path(args.out), args.count, args.seed, progress=progress
        )
    finally:
        if bar is not None:
            bar.close()
    print(
        f"{manifest['count']} {manifest['generator']} programs of seed {manifest['seed']} "
        f"({manifest['version']}): {args.out}"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    """Runs ``mlbridge corpus``."""
    commands = {"build": _build, "packages": _packages, "info": _info, "generate": _generate}
    return commands[args.corpus_command](args)

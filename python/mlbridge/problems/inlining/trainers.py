"""The inlining problem's own trainers, beside PPO: ``--method search`` and
``--method loop``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict

from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail
from mlbridge.corpus.defaults import default_corpus
from mlbridge.errors import MlbridgeError
from mlbridge.native import NativeError, plugin_path
from mlbridge.train.run_inputs import init_model, run_seed, say_aside, validated_programs


def train_by_search(args: argparse.Namespace, out: Path) -> None:
    """``mlbridge train inlining --method search``: rounds of per-unit search
    imitated by a residual policy (docs/inlining-size.md)."""
    # Imported here, where they are used: the training stack is the run's.
    from mlbridge.problems.inlining import size_training
    from mlbridge.problems.inlining.imitation import Policy

    corpus = Path(args.corpus) if args.corpus else default_corpus()
    if corpus is None:
        fail("--method search needs a --corpus (docs/inlining-size.md)", USAGE)
    try:
        plugin = Path(args.tool) if args.tool else plugin_path(llvm=args.llvm)
    except NativeError as err:
        raise CommandError(f"{err} (give --tool)", ENVIRONMENT) from None
    try:
        config = size_training.SizeTraining(
            units_per_round=args.units_per_round,
            max_rounds=args.rounds,
            patience=args.patience,
            validation_units=args.validation_units,
            seed=run_seed(args),
            jobs=args.workers,
            **({} if args.margin is None else {"margin": args.margin}),
        )
    except ValueError as err:
        fail(f"--margin: {err}", USAGE)
    try:
        start = init_model(args.init, args.task)
        init = Policy.from_onnx(start) if start else None
        programs, aside = validated_programs(corpus, not args.full)
        say_aside(aside)
        result = size_training.train_size_policy(
            programs,
            out,
            plugin,
            config,
            init,
            progress=None if args.no_progress else print,
            llvm=args.llvm,
        )
    except MlbridgeError as err:
        raise CommandError(str(err), ENVIRONMENT) from None
    best = f"round {result.best_round}, {result.best_ratio:.4f}x -Oz on the validation projects"
    print(f"stopped: {result.stopped}; best: {best}")
    if not (out / "policy.onnx").is_file():
        fail("no round did better than LLVM's own decisions: no policy written", ENVIRONMENT)
    print(f"policy: {out}/policy.onnx")


def train_by_loop(args: argparse.Namespace, out: Path) -> Dict[str, Any]:
    """``mlbridge train inlining --method loop``: the train-to-deploy loop
    (docs/loop.md). It deploys and measures its policy on the held-out
    programs itself: its report is the run's deployment report."""
    from mlbridge.problems.inlining.loop.run import run_loop, summary_markdown

    for option, given in (("--init", args.init), ("--seed", args.seed)):
        if given is not None:
            fail(f"{option}: not read by --method loop", USAGE)
    if args.repeats < 1:
        fail("--repeats: at least 1", USAGE)
    try:
        results = run_loop(
            out,
            plugin=Path(args.tool) if args.tool else None,
            corpus=Path(args.corpus) if args.corpus else None,
            quick=not args.full,
            es_iterations=args.es_iterations,
            jobs=args.workers,
            repeats=args.repeats,
            llvm=args.llvm,
        )
    except NativeError as err:
        raise CommandError(f"{err} (give --tool)", ENVIRONMENT) from None
    except MlbridgeError as err:
        raise CommandError(str(err), ENVIRONMENT) from None
    return {**results, "summary": summary_markdown(results).splitlines()}

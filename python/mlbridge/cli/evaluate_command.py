"""``mlbridge evaluate PROBLEM --policy FILE``: a policy deployed where the
compiler runs it, measured against the compiler's own heuristic on one split
of a corpus (docs/training.md). ``mlbridge train --evaluate-only`` measures
the same way."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Dict, Optional

from mlbridge.cli.arguments import add_problem_and_policy, natural
from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail
from mlbridge.llvm.versions import add_llvm_argument

NAME = "evaluate"
GROUP = "learn"

#: mlbridge.corpus.program's splits, written here so that building the
#: parser imports nothing more (a test checks they agree).
SPLITS = ("train", "validation", "held-out")


def add_parser(sub: Any) -> None:
    """Adds ``evaluate`` to the ``mlbridge`` subcommands."""

    evaluate = sub.add_parser(
        "evaluate",
        help="deploy a policy where the compiler runs it and measure it against "
        "the compiler's own heuristic on a corpus split",
    )
    add_problem_and_policy(evaluate)
    evaluate.add_argument(
        "--corpus",
        metavar="PATH",
        help="any format of docs/corpus.md (default: $MLBRIDGE_CORPUS, else "
        "./.cache/corpus, with the bundled programs)",
    )
    evaluate.add_argument(
        "--split", choices=SPLITS, default="held-out", help="which programs (default held-out)"
    )
    evaluate.add_argument(
        "--full", action="store_true", help="every program of the split (default: small ones)"
    )
    evaluate.add_argument(
        "--max-programs",
        type=natural,
        metavar="N",
        help="a fixed sample of N programs of the split, projects interleaved",
    )
    evaluate.add_argument(
        "--out", default="evaluate-out", help="work directory and report (default evaluate-out)"
    )
    evaluate.add_argument(
        "--tool", help="the native half (the plugin, the phase service; default: mlbridge config)"
    )
    add_llvm_argument(evaluate, "of the compiler (default: the newest with mlbridge parts)")


def measure(
    problem: str,
    policy: Path,
    corpus: Optional[Path],
    split: str,
    full: bool,
    tool: Optional[Path],
    work: Path,
    max_programs: Optional[int] = None,
    llvm: Optional[int] = None,
) -> Dict[str, Any]:
    """The problem's deployment of ``policy`` on ``split`` of ``corpus``
    (a sample of ``max_programs`` of it), measured (its report, with
    ``summary`` lines), on LLVM ``llvm`` (default: the newest installed)."""
    from mlbridge.corpus.defaults import default_corpus
    from mlbridge.gym.corpus_modules import corpus_modules
    from mlbridge.gym.modules import module_flags
    from mlbridge.llvm.versions import tools
    from mlbridge.native import NativeError
    from mlbridge.problems import get_problem, resolve
    from mlbridge.problems.capabilities import KernelSuite, OptimizedModules
    from mlbridge.train.tasks import evaluate, llvm_choice

    declared = get_problem(problem)
    try:
        llvm_choice(declared, llvm)
    except ValueError as err:
        fail(str(err), USAGE)
    if declared.evaluate is None:
        fail(f"the problem {problem} has no deployment to measure", USAGE)
    if not policy.is_file():
        fail(f"{policy} does not exist: train first", ENVIRONMENT)
    if corpus is not None and not corpus.exists():
        fail(f"--corpus {corpus}: no such file or directory", USAGE)
    suite = declared.get(KernelSuite)
    if suite is not None:
        if corpus is not None:
            fail(f"--corpus: {problem} runs on its own kernel suite", USAGE)
        modules = resolve(suite.modules)(split, work / "kernels")[:max_programs]
    else:
        modules = corpus_modules(
            corpus if corpus is not None else default_corpus(),
            split,
            not full,
            None,
            module_flags(declared.get(OptimizedModules) is not None),
            max_programs,
            # Bitcode for the LLVM that reads it (the problem's default major
            # when it has one only).
            tools(llvm if len(declared.llvm_majors) > 1 else None).clang,
        )
    if not modules:
        fail(f"the corpus has no {split} module to evaluate on", ENVIRONMENT)
    try:
        return evaluate(declared, policy, modules, work, tool, llvm)
    except NativeError as err:
        raise CommandError(f"{err} (give --tool)", ENVIRONMENT) from None


def run(args: argparse.Namespace) -> int:
    """Runs ``mlbridge evaluate``."""
    out = Path(args.out)
    report = measure(
        args.problem,
        Path(args.policy),
        Path(args.corpus) if args.corpus else None,
        args.split,
        args.full,
        Path(args.tool) if args.tool else None,
        out / "deploy",
        args.max_programs,
        args.llvm,
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "evaluate.json").write_text(json.dumps(report, indent=2) + "\n")
    for line in report["summary"]:
        print(line)
    print(f"details: {out}/evaluate.json")
    return 0

"""``mlbridge evaluate PROBLEM --policy FILE``: a policy deployed where the
compiler runs it, measured against the compiler's own heuristic on one split
of a corpus (docs/training.md). ``mlbridge train --evaluate-only`` measures
the same way."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional

from mlbridge.cli.arguments import (
    add_problem_and_policy,
    add_sandbox_arguments,
    natural,
    sandbox_limits,
)
from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail
from mlbridge.llvm.versions import add_llvm_argument

if TYPE_CHECKING:
    from mlbridge.validation.deployment import DeploymentChecks

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
    evaluate.add_argument(
        "--validate",
        action="store_true",
        help="also prove the measured programs still work with the policy deployed: their "
        "output against clang -O0, or a recipe's projects' own test suites (docs/validation.md)",
    )
    evaluate.add_argument(
        "--run-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="--validate: seconds a program may run (default 10)",
    )
    evaluate.add_argument(
        "--recipe",
        help="--validate: the recipe a built corpus was built from, a shipped name or a file "
        "(default: the name its manifest records)",
    )
    add_sandbox_arguments(evaluate)
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
    validate: Optional["DeploymentChecks"] = None,
) -> Dict[str, Any]:
    """The problem's deployment of ``policy`` on ``split`` of ``corpus``
    (a sample of ``max_programs`` of it), measured (its report, with
    ``summary`` lines), on LLVM ``llvm`` (default: the newest installed);
    with ``validate``, its ``validation`` too
    (:func:`mlbridge.validation.deployment.validate_deployment`, in
    ``work/validate``)."""
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
    if validate is not None:
        from mlbridge.validation.deployment import refusal

        why = refusal(declared)
        if why is not None:
            fail(f"--validate: {why}", USAGE)
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
        report = evaluate(declared, policy, modules, work, tool, llvm)
        if validate is not None:
            report["validation"] = _validated(
                declared, policy, corpus, split, full, modules, work, tool, report, validate
            )
            report["summary"] += report["validation"]["summary"]
    except NativeError as err:
        raise CommandError(f"{err} (give --tool)", ENVIRONMENT) from None
    return report


def _validated(
    problem: Any,
    policy: Path,
    corpus: Optional[Path],
    split: str,
    full: bool,
    modules: Any,
    work: Path,
    tool: Optional[Path],
    report: Dict[str, Any],
    checks: "DeploymentChecks",
) -> Dict[str, Any]:
    """``--validate``: the measured programs, proven to still work."""
    from mlbridge.corpus.defaults import default_corpus, load_corpus
    from mlbridge.errors import CorpusError
    from mlbridge.problems.capabilities import KernelSuite
    from mlbridge.validation.deployment import validate_deployment

    measured = {m.program for m in modules}
    path = corpus if corpus is not None else default_corpus()
    try:
        programs = []  # a kernel suite is validated by its checksums alone
        if problem.get(KernelSuite) is None:
            programs = [p for p in load_corpus(path, not full) if p.name in measured]
        return validate_deployment(
            problem, policy, programs, path, split, work / "validate", tool, report, checks
        )
    except CorpusError as err:
        raise CommandError(f"--validate: {err}", ENVIRONMENT) from None


def run(args: argparse.Namespace) -> int:
    """Runs ``mlbridge evaluate``."""
    out = Path(args.out)
    checks = None
    if args.validate:
        from mlbridge.validation.deployment import DeploymentChecks

        if not args.run_timeout > 0:
            fail("--run-timeout must be a positive number of seconds", USAGE)
        checks = DeploymentChecks(args.run_timeout, 2, sandbox_limits(args), args.llvm, args.recipe)
    elif args.recipe is not None:
        fail("--recipe is for --validate", USAGE)
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
        checks,
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "evaluate.json").write_text(json.dumps(report, indent=2) + "\n")
    for line in report["summary"]:
        print(line)
    print(f"details: {out}/evaluate.json")
    findings = report.get("validation", {}).get("findings", [])
    for finding in findings:
        what = finding.get("program") or finding.get("test") or finding.get("project")
        print(f"{finding['status']}: {what}: {finding['detail']}", file=sys.stderr)
    if findings:
        raise CommandError(f"--validate: {len(findings)} findings (details in evaluate.json)")
    return 0

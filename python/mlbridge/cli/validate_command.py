"""``mlbridge validate PROBLEM --policy FILE --corpus DIR``: proof that programs
built with a policy deployed still work (docs/validation.md). Each runnable
program of the corpus (csmith's: ``mlbridge corpus generate csmith``) is built
by ``clang -O0`` and with the policy deployed, both run under a deadline, and
their outputs compared; a finding (different outputs, a crash, a hang, a
build failure, a plugin that fell back) is kept as a reproducer and makes the
command fail.

``mlbridge validate PROBLEM --episodes baseline|random --corpus DIR``: the
problem's environment runs one episode on each module of the corpus
(llvm-stress's: ``mlbridge corpus generate llvm-stress``); an exception that
escapes it, an episode past its deadlines or a process that outlives its
episode is a finding.

``mlbridge validate PROBLEM --policy FILE --recipe R --project NAME``: each
project is built by its own build system and tested by its own test suite,
plainly (``clang -Oz``) and with the policy deployed, sandboxed; a test that
passes plainly and fails with the policy is a finding.

``--flags OPTIONS`` instead of ``--policy`` checks a constant configuration
(clang ``-Oz`` with those options) both ways."""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

from mlbridge.cli.arguments import (
    add_problem_and_policy,
    add_sandbox_arguments,
    natural,
    sandbox_limits,
)
from mlbridge.cli.progress import progress_bar
from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail
from mlbridge.llvm.versions import add_llvm_argument
from mlbridge.validation.build import LEVELS

NAME = "validate"
GROUP = "learn"


def add_parser(sub: Any) -> None:
    """Adds ``validate`` to the ``mlbridge`` subcommands."""
    validate = sub.add_parser(
        "validate",
        help="build runnable programs with a policy deployed and with clang -O0, run both "
        "and compare their outputs",
    )
    add_problem_and_policy(validate, required=False)
    validate.add_argument(
        "--flags",
        metavar="OPTIONS",
        help="instead of --policy: a constant configuration, clang at -Oz with these options "
        "(one string, split as a shell would, e.g. '-mllvm -inline-threshold=10')",
    )
    validate.add_argument(
        "--episodes",
        choices=("baseline", "random"),
        help="instead of building programs: one episode of the problem's environment on each "
        "module, with the compiler's own actions or random legal ones",
    )
    validate.add_argument(
        "--corpus",
        metavar="PATH",
        help="runnable programs, any format of docs/corpus.md (mlbridge corpus generate csmith)",
    )
    validate.add_argument(
        "--recipe",
        help="instead of --corpus: build projects of this recipe (a shipped name or a file) "
        "and run their own test suites",
    )
    validate.add_argument(
        "--project",
        action="append",
        metavar="NAME",
        help="a project of --recipe (repeatable; default: every one whose tests it describes)",
    )
    validate.add_argument(
        "--reference",
        choices=LEVELS,
        help="the reference build's level (default -O0 for programs, -Oz for projects, whose "
        "candidate build is forced to the same level)",
    )
    validate.add_argument(
        "--max-programs", type=natural, metavar="N", help="the first N programs only"
    )
    validate.add_argument(
        "--run-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds a program may run (default 10; a reference past it is skipped)",
    )
    validate.add_argument("--jobs", type=natural, default=2, help="programs at once (default 2)")
    validate.add_argument("--no-progress", action="store_true", help="no progress bar")
    validate.add_argument(
        "--out", default="validate-out", help="report, reproducers, work (default validate-out)"
    )
    validate.add_argument(
        "--tool",
        help="the native half (the plugin, the interactive host; default: mlbridge config)",
    )
    add_sandbox_arguments(validate)
    add_llvm_argument(validate, "of the compiler (default: the newest with mlbridge parts)")


def run(args: argparse.Namespace) -> int:
    """Runs ``mlbridge validate``."""
    from mlbridge.corpus.load import load_corpus
    from mlbridge.llvm.versions import tools
    from mlbridge.problems import get_problem
    from mlbridge.problems.capabilities import DeployedBuild
    from mlbridge.validation import check_programs, reference_build

    problem = get_problem(args.problem)
    if args.jobs < 1:
        fail("--jobs must be at least 1", USAGE)
    if args.episodes is not None:
        if args.flags is not None:
            fail("--episodes takes no --flags", USAGE)
        return _episodes(args, problem)
    if args.policy is None and args.flags is None:
        fail("--policy is required (or --flags, or --episodes)", USAGE)
    if args.policy is not None and args.flags is not None:
        fail("give one of --policy and --flags", USAGE)
    deployed = problem.get(DeployedBuild)
    if args.flags is None and deployed is None:
        fail(f"the problem {args.problem} does not build programs with a policy yet", USAGE)
    policy = Path(args.policy) if args.policy is not None else None
    if policy is not None and not policy.is_file():
        fail(f"{policy} does not exist", ENVIRONMENT)
    if (args.corpus is None) == (args.recipe is None):
        fail("give one of --corpus (programs) and --recipe (projects)", USAGE)
    if args.recipe is not None:
        return _projects(args, deployed, policy)
    if not args.run_timeout > 0:
        fail("--run-timeout must be a positive number of seconds", USAGE)
    programs = load_corpus(Path(args.corpus))[: args.max_programs]
    if not programs:
        fail(f"{args.corpus} has no program", ENVIRONMENT)
    candidate = _candidate(args, deployed, policy)
    reference = reference_build(args.reference or "-O0", tools(args.llvm))
    out = Path(args.out)
    findings = out / "findings"
    with _progress(args, len(programs), "validate", "program") as progress:
        report = check_programs(
            programs,
            reference,
            candidate,
            out / "work",
            jobs=args.jobs,
            run_timeout=args.run_timeout,
            findings=findings,
            progress=progress,
        )
    return _ended(
        report,
        out / "validate.json",
        f"{report['programs']} programs",
        f"{report['compared']} compared, {len(report['findings'])} findings"
        + (f"; {report['decisions']} decisions of the policy" if policy is not None else ""),
        "program",
        f", reproducers in {findings}",
    )


def _candidate(args: argparse.Namespace, deployed: Any, policy: Optional[Path]) -> Any:
    """The problem's build with ``policy`` deployed, or clang with
    ``--flags`` (a Build)."""
    from mlbridge.llvm.versions import tools
    from mlbridge.native import NativeError
    from mlbridge.problems import resolve
    from mlbridge.validation.build import flags_build

    if policy is None:
        try:
            return flags_build(shlex.split(args.flags), llvm=tools(args.llvm))
        except ValueError as err:
            raise CommandError(f"--flags: {err}", USAGE) from None
    tool = Path(args.tool) if args.tool else None
    try:
        return resolve(deployed.make)(policy, tool, args.llvm)
    except NativeError as err:
        raise CommandError(f"{err} (give --tool)", ENVIRONMENT) from None


def _projects(args: argparse.Namespace, deployed: Any, policy: Optional[Path]) -> int:
    """``--recipe``: the projects' own test suites, plainly and with the
    policy (:mod:`mlbridge.validation.projects`)."""
    from mlbridge.corpus.recipe import read_recipe
    from mlbridge.errors import CorpusError
    from mlbridge.llvm.versions import tools
    from mlbridge.validation import reference_build
    from mlbridge.validation.projects import LEFT_OUT, validate_projects

    if args.episodes is not None or args.max_programs is not None:
        fail("--recipe takes neither --episodes nor --max-programs", USAGE)
    try:
        recipe = read_recipe(args.recipe)
        chosen = (
            [recipe.project(name) for name in args.project]
            if args.project
            else [p for p in recipe.projects if p.tests is not None]
        )
    except CorpusError as err:
        raise CommandError(str(err), USAGE) from None
    untested = [p.name for p in chosen if p.tests is None]
    if untested or not chosen:
        fail(f"recipe {recipe.name}: no test suite described for {', '.join(untested)}", USAGE)
    out = Path(args.out).resolve()
    reference = reference_build(args.reference or "-Oz", tools(args.llvm))
    candidate = _candidate(args, deployed, policy)
    with _progress(args, len(chosen), "validate", "project") as progress:
        report = validate_projects(
            chosen,
            reference,
            candidate.at_level(reference),
            out,
            args.jobs,
            sandbox_limits(args),
            progress=progress,
        )
    for record in report["projects"]:
        counts = ", ".join(f"{k} {n}" for k, n in record.get("counts", {}).items())
        print(f"{record['project']}: {record['status']}" + (f" ({counts})" if counts else ""))
        if record["status"] in LEFT_OUT:
            print(f"{record['project']}: {record['detail']}", file=sys.stderr)
    if all(r["status"] in LEFT_OUT for r in report["projects"]):
        raise CommandError("no project was built and tested plainly: nothing was compared")
    return _ended(
        report,
        out / "projects.json",
        f"{len(chosen)} projects, their tests",
        f"{len(report['findings'])} findings",
        "test",
        f"; both trees of each project are kept in {out / 'projects'}",
    )


@contextlib.contextmanager
def _progress(args: argparse.Namespace, total: int, what: str, unit: str) -> Iterator[Any]:
    """A progress callback (None without a bar) that advances a bar by one
    item a call, the bar closed on the way out."""
    bar = progress_bar(total, what, unit, not args.no_progress)
    try:
        yield (lambda item: bar.update(1)) if bar is not None else None
    finally:
        if bar is not None:
            bar.close()


def _ended(
    report: Dict[str, Any], path: Path, items: str, figures: str, key: str, where: str = ""
) -> int:
    """Writes ``report`` to ``path``, prints its line (``items`` with its
    counts per status, then ``figures``) and each finding (its ``key``,
    status and detail); a CommandError when there is a finding."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    counts = ", ".join(f"{status} {n}" for status, n in report["counts"].items())
    print(f"{items} ({counts}); {figures}; {report['seconds']:.0f} s: {path}")
    for finding in report["findings"]:
        print(f"{finding['status']}: {finding[key]}: {finding['detail']}", file=sys.stderr)
    if report["findings"]:
        raise CommandError(f"{len(report['findings'])} findings{where}")
    return 0


def _episodes(args: argparse.Namespace, problem: Any) -> int:
    """``--episodes``: the robustness run (:mod:`mlbridge.validation.episodes`)."""
    import gymnasium

    import mlbridge.gym  # noqa: F401  (registers the ids)
    from mlbridge.corpus.load import load_corpus
    from mlbridge.corpus.program import BITCODE_SUFFIXES
    from mlbridge.problems.capabilities import KernelSuite
    from mlbridge.validation.episodes import run_episodes

    if problem.get(KernelSuite) is not None:
        fail(f"{problem.name} runs on its own kernel suite, not on a corpus's modules", USAGE)
    if args.corpus is None:
        fail("--episodes runs on the modules of a --corpus", USAGE)
    programs = load_corpus(Path(args.corpus))[: args.max_programs]
    if not programs:
        fail(f"{args.corpus} has no program", ENVIRONMENT)
    kwargs: Dict[str, Any] = {}
    if args.llvm is not None and len(problem.llvm_majors) > 1:
        kwargs["llvm"] = args.llvm
    if all(len(p.sources) == 1 and p.sources[0].suffix in BITCODE_SUFFIXES for p in programs):
        kwargs["modules"] = [p.sources[0] for p in programs]
    else:
        kwargs.update(corpus=args.corpus, split="all", max_programs=args.max_programs)
    env: Any = gymnasium.make(problem.env_id, **kwargs).unwrapped
    names = [m.name for m in env.modules]
    try:
        with _progress(args, len(names), problem.name, "episode") as progress:
            report = run_episodes(env, names, args.episodes, progress=progress)
    finally:
        env.close()  # run_episodes closes it too, but not when it raises
    return _ended(
        report,
        Path(args.out) / "episodes.json",
        f"{report['episodes']} episodes of {problem.name}",
        f"{len(report['findings'])} findings; {report['steps']} steps",
        "module",
    )

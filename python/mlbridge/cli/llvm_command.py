"""``mlbridge llvm``: run an LLVM compiler whose decisions a policy takes, through
LLVM's ML advisors (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from mlbridge.cli.arguments import (
    exit_code,
    open_output,
    positive,
    problem_policies,
    require_executable,
    seconds,
)
from mlbridge.cli_errors import ENVIRONMENT, POLICY_FAILED, USAGE, fail, warn
from mlbridge.llvm.versions import add_llvm_argument
from mlbridge.policies import INLINING, LLVM_DECISIONS, REGALLOC_EVICTION, REGALLOC_PRIORITY

if TYPE_CHECKING:
    from mlbridge.llvm import RunResult

#: The command's name and its group in ``mlbridge --help``.
NAME = "llvm"
GROUP = "use"

#: What the warning of a problem whose advisor was asked nothing suggests.
_NO_DECISION_HINTS = {
    INLINING: "inlining decision (is the optimisation level -O0, or the ML inliner not enabled?)",
    REGALLOC_EVICTION: "eviction decision (is the optimisation level -O0, or did register "
    "allocation never need to evict?)",
    REGALLOC_PRIORITY: "register priority decision (is the optimisation level -O0, or the "
    "greedy register allocator not used?)",
}


def _llvm_outcome(args: argparse.Namespace, result: RunResult) -> int:
    """Report a served compilation (one line at most per problem); its exit code."""
    from mlbridge.pipe_host import PolicyFailed

    failed = [run for run in result.problems.values() if run.error]
    if result.timed_out:
        fail(f"the compilation ran longer than --timeout {args.timeout:g} s and was stopped")
    for run in failed:
        if isinstance(run.exception, PolicyFailed):
            what = str(run.exception)
            if not what.startswith("policy failed"):
                what = f"policy failed: {what}"
            fail(f"the {run.problem} {what} (the compiler was stopped)", POLICY_FAILED)
    if failed:
        fail(f"{result.error} (the compiler was stopped)")
    if result.returncode == 0:
        for run in result.problems.values():
            if run.stats.decisions == 0:
                warn(
                    "mlbridge llvm",
                    "the compiler asked no "
                    + _NO_DECISION_HINTS.get(run.problem, f"{run.problem} decision"),
                )
    return exit_code(result.returncode)


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge llvm`` to the subcommands ``sub``."""
    llvm = sub.add_parser(
        "llvm",
        help="run an LLVM compiler (19, or 16 through mlbridge's plugin) whose "
        "decisions of a problem a policy takes",
    )
    llvm.add_argument(
        "--problem",
        action="append",
        choices=LLVM_DECISIONS,
        required=True,
        help="the decision the policy takes, through LLVM's ML advisor for it; repeat "
        "to serve regalloc-eviction and regalloc-priority at once",
    )
    llvm.add_argument(
        "--policy",
        action="append",
        required=True,
        help="default | always | never | zeros | file.py:NAME | module:NAME; "
        "once for every problem or once per --problem",
    )
    llvm.add_argument(
        "--log",
        help="write an LLVM training log (features + decision); "
        "with several problems, FILE.PROBLEM",
    )
    llvm.add_argument("--stats-json", help="write decisions, host cost, return code here")
    llvm.add_argument(
        "--timeout", type=seconds, help="kill the compilation after S seconds (default: no limit)"
    )
    llvm.add_argument(
        "--io-timeout",
        type=seconds,
        help="fail when the compiler is silent for S seconds mid-session",
    )
    llvm.add_argument(
        "--include-default",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="send LLVM's own inlining decision as feature "
        "'inlining_default' (default: when the policy wants it)",
    )
    llvm.add_argument(
        "--size-increase-threshold",
        type=positive,
        help="LLVM's -ml-advisor-size-increase-threshold (default 2.0; "
        "lifted for --policy default): the inliner stops asking once the "
        "module grew by this factor",
    )
    llvm.add_argument(
        "compiler",
        nargs=argparse.REMAINDER,
        help="-- COMPILER_COMMAND... (clang-19, opt-19, llc-19; clang-16, opt-16)",
    )
    add_llvm_argument(
        llvm,
        "of the compiler, when its name does not say (clang-16 does); below 17 the "
        "inliner is served through mlbridge's plugin for it",
    )


def run(args: argparse.Namespace) -> int:
    from mlbridge.llvm import run_compiler
    from mlbridge.llvm.temp_outputs import TempOutputs
    from mlbridge.llvm.versions import LlvmVersionError
    from mlbridge.native import NativeError

    command = args.compiler[1:] if args.compiler[:1] == ["--"] else args.compiler
    if not command:
        fail("no compiler command given (mlbridge llvm ... -- COMMAND...)", USAGE)
    require_executable(command[0], "the compiler")
    policies = problem_policies(args)
    leftovers = TempOutputs(command)
    try:
        with ExitStack() as stack:
            logs = {}
            if args.log:
                for name in policies:
                    path = args.log if len(policies) == 1 else f"{args.log}.{name}"
                    logs[name] = stack.enter_context(open_output(path, "--log"))
            result = run_compiler(
                command,
                policies,
                timeout=args.timeout,
                io_timeout=args.io_timeout,
                logs=logs,
                include_default=args.include_default,
                size_increase_threshold=args.size_increase_threshold,
                echo_stderr=sys.stderr,
                # The user's command, in the user's environment; a plugin
                # mlbridge loads itself gets only its own variables.
                env=os.environ,
                llvm=args.llvm,
            )
    except LlvmVersionError as err:
        fail(str(err), USAGE)
    except NativeError as err:
        fail(str(err), ENVIRONMENT)
    finally:
        leftovers.remove_new()  # what a stopped compiler could not clean up
    if args.stats_json:
        with open_output(args.stats_json, "--stats-json") as out:
            out.write(json.dumps(result.to_dict(), indent=2).encode() + b"\n")
    return _llvm_outcome(args, result)

"""``mlbridge wrap``: the CC and CXX of a build whose every unit a module
pipeline optimises (docs/phase-ordering.md#deployment-in-a-build)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mlbridge.cli.arguments import count
from mlbridge.cli_errors import ENVIRONMENT, USAGE, fail
from mlbridge.llvm.versions import add_llvm_argument

#: The command's name and its group in ``mlbridge --help``.
NAME = "wrap"
GROUP = "use"


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge wrap`` to the subcommands ``sub``."""
    wrap = sub.add_parser(
        "wrap",
        help="write a build's CC and CXX that run clang's front end, a module pipeline "
        "in mlbridge-phase-service and clang's -Oz code generation",
        description="Write mlbridge-pipeline-cc and mlbridge-pipeline-c++ into --out and "
        "print them as CC=... and CXX=... lines, for make, CMake, meson or autotools.",
    )
    wrap.add_argument("--out", type=Path, required=True, help="the wrappers' directory")
    what = wrap.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--pipeline",
        metavar="TEXT",
        help="a constant pipeline (opt -passes= syntax; default<Oz> is clang -Oz's)",
    )
    what.add_argument(
        "--runner",
        metavar="CONFIG",
        help="a runner choosing the service's actions (docs/runner-config.md), "
        "e.g. onnx:policy.onnx",
    )
    wrap.add_argument("--max-steps", type=count, default=32, help="with --runner: actions per unit")
    wrap.add_argument(
        "--no-baseline",
        action="store_true",
        help="with --runner: the model does not read baseline_instcount, so the service "
        "skips the -Oz run that computes it (a pipeline chooser's metadata says so)",
    )
    wrap.add_argument(
        "--level",
        default="-Oz",
        choices=("-Oz", "-Os", "-O2"),
        help="the level appended after the project's flags (default -Oz)",
    )
    add_llvm_argument(wrap, "whose clang and phase service (default: the newest installed)")


def run(args: argparse.Namespace) -> int:
    from mlbridge.llvm.versions import tools
    from mlbridge.native import NativeError, phase_service_path, pipeline_clang_path
    from mlbridge.problems.phase_ordering.pipeline_wrapper import write_pipeline_wrappers

    if args.no_baseline and args.pipeline is not None:
        fail("--no-baseline is for --runner: a constant pipeline reads no observation", USAGE)
    llvm = tools(args.llvm)
    try:
        service = str(phase_service_path(llvm=llvm.major))
        driver = pipeline_clang_path(llvm=llvm.major)
        cc, cxx = write_pipeline_wrappers(
            args.out,
            clang=llvm.clang,
            clangxx=llvm.clangxx,
            service=service,
            pipeline=args.pipeline,
            runner=args.runner,
            max_steps=args.max_steps,
            no_baseline=args.no_baseline,
            level=args.level,
            driver=None if driver is None else str(driver),
        )
    except (NativeError, FileNotFoundError) as err:
        fail(str(err), ENVIRONMENT)
    except OSError as err:
        fail(f"cannot write the wrappers into {args.out}: {err}")
    print(f"CC={cc}")
    print(f"CXX={cxx}")
    return 0

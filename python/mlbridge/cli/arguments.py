"""What the commands share: argument types (numbers, sizes, durations),
policies named on the command line, output files, executables, the
sandbox's limits."""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, Optional

from mlbridge.cli_errors import ENVIRONMENT, USAGE, CommandError, fail
from mlbridge.output_files import open_output_file
from mlbridge.policies import PolicyError, load_policy
from mlbridge.policy import Policy

if TYPE_CHECKING:
    from mlbridge.corpus.sandbox import BuildLimits


def number(text: str, what: str) -> float:
    """``text`` as a finite float, else ArgumentTypeError naming ``what``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'")
    return value


def seconds(text: str) -> float:
    """A duration in seconds: a finite number > 0."""
    return number(text, "a positive number of seconds")


def positive(text: str) -> float:
    """A factor: a finite number > 0."""
    return number(text, "a positive number")


def whole(text: str, least: int) -> int:
    """``text`` as an integer >= ``least``, else ArgumentTypeError."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {least}, got '{text}'")
    return value


def count(text: str) -> int:
    """A whole number, at least 1."""
    return whole(text, 1)


def add_problem_and_policy(parser: Any, required: bool = True) -> None:
    """The arguments of a command that deploys a trained policy: ``PROBLEM``
    (a problem of the registry) and ``--policy FILE`` (``required`` or not)."""
    from mlbridge.problems import PROBLEMS

    parser.add_argument("problem", choices=sorted(PROBLEMS), help="what the policy decides")
    parser.add_argument(
        "--policy", required=required, metavar="FILE", help="the policy (policy.onnx of a run)"
    )


def natural(text: str) -> int:
    """A whole number, at least 0."""
    return whole(text, 0)


def size(text: str) -> int:
    """Bytes, with an optional K, M or G suffix (powers of 1024); at least 1."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    try:
        value = int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a size in bytes >= 1 (e.g. 1048576, 64M, 1G), got '{text}'"
        )
    return value


def load_policy_arg(spec: str, problem: Optional[str]) -> Policy:
    """The policy ``spec`` names; a spec that names no usable policy is a usage error."""
    if spec.lower().endswith(".onnx") and importlib.util.find_spec("onnxruntime") is None:
        fail(
            f"serving the ONNX model {spec} needs the onnxruntime Python package, "
            f"which is not installed",
            ENVIRONMENT,
        )
    try:
        return load_policy(spec, problem)
    except PolicyError as err:
        raise CommandError(f"--policy {spec}: {err}", USAGE) from None


def problem_policies(args: argparse.Namespace) -> Dict[str, Policy]:
    """Problem name -> policy, from ``--problem`` (repeated) and ``--policy``
    (once for all, or once per problem)."""
    if len(args.policy) not in (1, len(args.problem)):
        fail(
            f"give one --policy, or one per --problem ({len(args.problem)}), "
            f"not {len(args.policy)}",
            USAGE,
        )
    specs = args.policy * len(args.problem) if len(args.policy) == 1 else args.policy
    if len(set(args.problem)) != len(args.problem):
        fail("a problem is given twice", USAGE)
    return {name: load_policy_arg(spec, name) for name, spec in zip(args.problem, specs)}


def exit_code(returncode: int) -> int:
    """A child's return code as a shell reports it (killed by signal N: 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def require_executable(program: str, what: str, hint: str = "") -> None:
    """Fail with ENVIRONMENT when ``program`` is neither on PATH nor an executable path."""
    if shutil.which(program) is None:
        where = "is not an executable file" if os.sep in program else "is not on PATH"
        fail(f"{what} '{program}' {where}{hint}", ENVIRONMENT)


def open_output(path: str, option: str) -> BinaryIO:
    """``path`` opened for writing; an OSError is one line naming ``option``."""
    try:
        return open_output_file(path)
    except OSError as err:
        raise CommandError(f"{option} {path}: cannot write: {err.strerror or err}") from None


def read_file(path: Optional[str], what: str) -> Optional[bytes]:
    """The bytes of ``path`` (None for None); OSError as one line naming ``what``."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise CommandError(f"{what} {path}: {err.strerror or err}") from None


def add_sandbox_arguments(parser: Any) -> None:
    """``--build-user``, ``--step-timeout`` and ``--memory-limit``: the
    limits of the sandbox projects' build steps run in
    (:mod:`mlbridge.corpus.sandbox`); :func:`sandbox_limits` reads them."""
    from mlbridge.corpus.sandbox import (
        DEFAULT_BUILD_USER,
        DEFAULT_MEMORY_BYTES,
        DEFAULT_STEP_TIMEOUT_S,
    )

    parser.add_argument(
        "--build-user",
        default=DEFAULT_BUILD_USER,
        help="run as root, the projects' build steps run as this unprivileged user "
        f"(default: {DEFAULT_BUILD_USER})",
    )
    parser.add_argument(
        "--step-timeout",
        type=natural,
        default=int(DEFAULT_STEP_TIMEOUT_S),
        help=f"seconds one configure or build step may take (default: {DEFAULT_STEP_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--memory-limit",
        type=natural,
        default=DEFAULT_MEMORY_BYTES >> 20,
        help="MiB of address space one process of a build step may use "
        f"(default: {DEFAULT_MEMORY_BYTES >> 20})",
    )


def sandbox_limits(args: argparse.Namespace) -> "BuildLimits":
    """The sandbox's limits from :func:`add_sandbox_arguments`' options."""
    from mlbridge.corpus.sandbox import BuildLimits

    return BuildLimits(float(args.step_timeout), args.memory_limit << 20, args.build_user)

"""``mlbridge drive``: make the decisions of a compiler that is the gRPC server (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mlbridge.cli.arguments import (
    load_policy_arg,
    read_file,
    seconds,
)
from mlbridge.cli_errors import fail
from mlbridge.policies import LLVM_DECISIONS

#: The command's name and its group in ``mlbridge --help``.
NAME = "drive"
GROUP = "use"


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge drive`` to the subcommands ``sub``."""
    drive = sub.add_parser(
        "drive",
        help="make the decisions of a compiler that serves "
        "mlbridge.v1.CompilerService (compiler as server)",
    )
    drive.add_argument(
        "--grpc",
        required=True,
        metavar="ADDRESS",
        help="the compiler's address: unix:PATH or HOST:PORT",
    )
    drive.add_argument("--policy", required=True)
    drive.add_argument(
        "--problem",
        choices=LLVM_DECISIONS,
        help="the decision served, for the built-in policies default/always/never",
    )
    drive.add_argument(
        "--connect-timeout",
        type=seconds,
        default=30.0,
        help="seconds to wait for the compiler's server",
    )
    drive.add_argument("--tls-ca", help="TLS: the CA that signed the compiler's certificate")
    drive.add_argument("--tls-cert", help="TLS: this driver's certificate (PEM)")
    drive.add_argument("--tls-key", help="TLS: the key of --tls-cert (PEM)")


def run(args: argparse.Namespace) -> int:
    import grpc
    from mlbridge.grpc_driver import DriverError, drive

    credentials = None
    if args.tls_ca:
        credentials = grpc.ssl_channel_credentials(
            read_file(args.tls_ca, "--tls-ca"),
            read_file(args.tls_key, "--tls-key"),
            read_file(args.tls_cert, "--tls-cert"),
        )
    policy = load_policy_arg(args.policy, args.problem)
    try:
        stats = drive(
            args.grpc, policy, connect_timeout=args.connect_timeout, credentials=credentials
        )
    except grpc.FutureTimeoutError:
        fail(
            f"no compiler server answered at {args.grpc} within {args.connect_timeout:g} s "
            f"(--connect-timeout): is the compiler running and serving "
            f"mlbridge.v1.CompilerService there?"
        )
    except grpc.RpcError as err:
        code = err.code() if callable(getattr(err, "code", None)) else None
        details = err.details() if callable(getattr(err, "details", None)) else str(err)
        name = code.name if code is not None else type(err).__name__
        fail(f"the session with the compiler at {args.grpc} failed: {name}: {details}")
    except DriverError as err:
        fail(f"the compiler at {args.grpc} broke the protocol: {err}")
    print(
        f"mlbridge drive: {stats.decisions} decisions, {stats.errors_reported} policy "
        f"errors in {stats.seconds:.2f} s",
        file=sys.stderr,
    )
    return 0

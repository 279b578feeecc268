"""``mlbridge serve``: serve a policy on a pipe channel or over gRPC (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import ExitStack
from typing import Any, List

from mlbridge.cli.arguments import (
    count,
    load_policy_arg,
    natural,
    open_output,
    read_file,
    seconds,
    size,
)
from mlbridge.cli_errors import POLICY_FAILED, USAGE, CommandError, fail
from mlbridge.policies import LLVM_DECISIONS
from mlbridge.policy import Policy

#: The command's name and its group in ``mlbridge --help``.
NAME = "serve"
GROUP = "use"


def _check_pipe(base: str, create: bool) -> None:
    """Usage errors of ``--pipe BASE`` found before serving (a missing
    directory, FIFOs missing without ``--create`` or present with it)."""
    directory = os.path.dirname(os.path.abspath(base))
    if not os.path.isdir(directory):
        fail(f"--pipe {base}: the directory {directory} does not exist", USAGE)
    ends = (base + ".in", base + ".out")
    if create:
        for path in ends:
            if os.path.lexists(path):
                fail(
                    f"--pipe {base}: {path} already exists (remove it, or serve the "
                    f"existing FIFOs without --create)",
                    USAGE,
                )
    else:
        for path in ends:
            if not os.path.lexists(path):
                fail(
                    f"--pipe {base}: {path} does not exist (give --create to make the "
                    f"FIFOs, or make them first: mkfifo {ends[0]} {ends[1]})",
                    USAGE,
                )


def _add_grpc_limits(serve: argparse.ArgumentParser) -> None:
    """The limits of `serve --grpc` (mlbridge.grpc_sessions.ServerLimits)."""
    from mlbridge import grpc_sessions as limits

    group = serve.add_argument_group("limits of --grpc (see docs/grpc.md, Limits)")
    group.add_argument(
        "--workers",
        type=count,
        default=limits.DEFAULT_WORKERS,
        help="server threads (default: %(default)s)",
    )
    group.add_argument(
        "--max-streams",
        type=count,
        help=f"streams open at once (default: workers - "
        f"{limits.RESERVED_WORKERS}); more are refused at once",
    )
    group.add_argument(
        "--max-sessions",
        type=count,
        default=limits.DEFAULT_MAX_SESSIONS,
        help="open unary sessions; when full the stalest idle one is "
        "evicted (default: %(default)s)",
    )
    group.add_argument(
        "--session-memory",
        type=size,
        default=limits.DEFAULT_SESSION_MEMORY,
        help="bytes all sessions and streams may hold together, e.g. 512M (default: %(default)s)",
    )
    group.add_argument(
        "--max-message-bytes",
        type=size,
        default=limits.DEFAULT_MAX_BYTES,
        help="largest request or reply (default: %(default)s)",
    )
    group.add_argument(
        "--session-idle-timeout",
        type=seconds,
        default=limits.DEFAULT_SESSION_IDLE_TIMEOUT,
        help="drop unary sessions unused for S seconds (default: %(default)s)",
    )
    group.add_argument(
        "--stream-idle-timeout",
        type=seconds,
        default=limits.DEFAULT_STREAM_IDLE_TIMEOUT,
        help="end streams whose client is silent for S seconds (default: %(default)s)",
    )


def add_parser(sub: Any) -> None:
    """Adds ``mlbridge serve`` to the subcommands ``sub``."""
    serve = sub.add_parser("serve", help="serve a policy on a pipe channel or over gRPC")
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument("--pipe", help="channel base: BASE.in and BASE.out")
    where.add_argument(
        "--grpc", metavar="ADDRESS", help="serve mlbridge.v1.ModelService at unix:PATH or HOST:PORT"
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --grpc: allow binding a non-loopback address",
    )
    serve.add_argument("--tls-cert", help="with --grpc: serve TLS with this PEM certificate")
    serve.add_argument("--tls-key", help="with --grpc: the certificate's PEM key")
    serve.add_argument(
        "--tls-client-ca", help="with --grpc: require client certificates signed by this CA"
    )
    _add_grpc_limits(serve)
    serve.add_argument("--policy", required=True)
    serve.add_argument(
        "--problem",
        choices=LLVM_DECISIONS,
        help="the decision served, for the built-in policies default/always/never",
    )
    serve.add_argument(
        "--create",
        action="store_true",
        help="create the FIFOs (mode 0600) first and remove them at exit",
    )
    serve.add_argument(
        "--max-requests", type=count, help="stop after this many decisions in a session"
    )
    serve.add_argument(
        "--sessions",
        type=natural,
        default=1,
        help="sessions to serve one after the other (0: until killed)",
    )
    serve.add_argument(
        "--timeout",
        type=seconds,
        help="give up when the compiler does not open or write for S seconds",
    )
    serve.add_argument("--log", help="write an LLVM training log of the decisions")
    serve.add_argument("--stats-json", help="write the statistics of the sessions here")


def run(args: argparse.Namespace) -> int:
    from mlbridge.channel import make_fifos
    from mlbridge.pipe_host import PipeHost, PolicyFailed

    if args.pipe:
        _check_pipe(args.pipe, args.create)
    policy = load_policy_arg(args.policy, args.problem)
    if args.grpc:
        return _serve_grpc(args, policy)
    all_stats: List[dict] = []
    with ExitStack() as stack:
        if args.create:
            stack.enter_context(make_fifos(args.pipe))
        log = stack.enter_context(open_output(args.log, "--log")) if args.log else None
        host = PipeHost(
            policy,
            open_timeout=args.timeout,
            io_timeout=args.timeout,
            log=log,
            max_requests=args.max_requests,
        )
        served = 0
        try:
            while args.sessions == 0 or served < args.sessions:
                all_stats.append(host.serve(args.pipe).to_dict())
                served += 1
        except PolicyFailed as err:
            fail(f"the policy failed: {err} (the session was ended)", POLICY_FAILED)
        finally:
            if args.stats_json:
                with open_output(args.stats_json, "--stats-json") as out:
                    out.write(json.dumps({"sessions": all_stats}, indent=2).encode() + b"\n")
    return 0


def _serve_grpc(args: argparse.Namespace, policy: Policy) -> int:
    from mlbridge.grpc_server import AddressError, start_server

    credentials = None
    if args.tls_cert or args.tls_key or args.tls_client_ca:
        import grpc

        if not (args.tls_cert and args.tls_key):
            fail("TLS needs both --tls-cert and --tls-key", USAGE)
        pair = (read_file(args.tls_key, "--tls-key"), read_file(args.tls_cert, "--tls-cert"))
        client_ca = read_file(args.tls_client_ca, "--tls-client-ca")
        credentials = grpc.ssl_server_credentials(
            [pair], root_certificates=client_ca, require_client_auth=client_ca is not None
        )
    try:
        running = start_server(
            policy,
            args.grpc,
            allow_remote=args.allow_remote,
            credentials=credentials,
            workers=args.workers,
            max_streams=args.max_streams,
            max_sessions=args.max_sessions,
            session_memory=args.session_memory,
            max_message_bytes=args.max_message_bytes,
            session_idle_timeout=args.session_idle_timeout,
            stream_idle_timeout=args.stream_idle_timeout,
        )
    except (AddressError, ValueError) as err:
        raise CommandError(str(err), USAGE) from None
    print(f"mlbridge serve: serving {args.policy} at {running.target}", file=sys.stderr)
    try:
        running.wait()
    finally:  # Ctrl-C or SIGTERM: stop serving (then exit 130 / 143)
        running.stop()
    return 0

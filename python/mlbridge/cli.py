"""The ``mlbridge`` command.

::

    mlbridge llvm --advisor inline --policy default [--log FILE] [--stats-json FILE]
                  [--timeout S] -- clang-19 -Oz -c f.c
    mlbridge serve --pipe BASE --policy POLICY [--create] [--max-requests N]
    mlbridge log dump FILE
    mlbridge demo
    mlbridge loop [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import ExitStack
from typing import Dict, List, Optional, Sequence

from mlbridge.errors import MlbridgeError
from mlbridge.policies import ADVISORS, load_policy


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _count(text: str) -> int:
    """A whole number, at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _size(text: str) -> int:
    """Bytes, with an optional K, M or G suffix (powers of 1024)."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    try:
        return _count(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text} (e.g. 1048576, 64M, 1G)") \
            from None


def _add_grpc_limits(serve: argparse.ArgumentParser) -> None:
    """The limits of `serve --grpc` (mlbridge.grpc_sessions.ServerLimits)."""
    from mlbridge import grpc_sessions as limits

    group = serve.add_argument_group("limits of --grpc (see docs/grpc.md, Limits)")
    group.add_argument("--workers", type=_count, default=limits.DEFAULT_WORKERS,
                       help="server threads (default: %(default)s)")
    group.add_argument("--max-streams", type=_count,
                       help=f"streams open at once (default: workers - "
                       f"{limits.RESERVED_WORKERS}); more are refused at once")
    group.add_argument("--max-sessions", type=_count, default=limits.DEFAULT_MAX_SESSIONS,
                       help="open unary sessions; when full the stalest idle one is "
                       "evicted (default: %(default)s)")
    group.add_argument("--session-memory", type=_size, default=limits.DEFAULT_SESSION_MEMORY,
                       help="bytes all sessions and streams may hold together, e.g. 512M "
                       "(default: %(default)s)")
    group.add_argument("--max-message-bytes", type=_size, default=limits.DEFAULT_MAX_BYTES,
                       help="largest request or reply (default: %(default)s)")
    group.add_argument("--session-idle-timeout", type=_positive,
                       default=limits.DEFAULT_SESSION_IDLE_TIMEOUT,
                       help="drop unary sessions unused for S seconds (default: %(default)s)")
    group.add_argument("--stream-idle-timeout", type=_positive,
                       default=limits.DEFAULT_STREAM_IDLE_TIMEOUT,
                       help="end streams whose client is silent for S seconds "
                       "(default: %(default)s)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlbridge", description=__doc__.split("::")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    llvm = sub.add_parser("llvm", help="run an LLVM 19 compiler whose ML advisor(s) "
                          "a policy serves")
    llvm.add_argument("--advisor", action="append", choices=ADVISORS, required=True,
                      help="advisor to serve; repeat to serve evict and priority at once")
    llvm.add_argument("--policy", action="append", required=True,
                      help="default | always | never | zeros | file.py:NAME | module:NAME; "
                      "once for every advisor or once per --advisor")
    llvm.add_argument("--log", help="write an LLVM training log (features + decision); "
                      "with several advisors, FILE.ADVISOR")
    llvm.add_argument("--stats-json", help="write decisions, host cost, return code here")
    llvm.add_argument("--timeout", type=_positive,
                      help="kill the compilation after S seconds (default: no limit)")
    llvm.add_argument("--io-timeout", type=_positive,
                      help="fail when the compiler is silent for S seconds mid-session")
    llvm.add_argument("--include-default", action=argparse.BooleanOptionalAction,
                      default=None, help="send LLVM's own inlining decision as feature "
                      "'inlining_default' (default: when the policy wants it)")
    llvm.add_argument("--size-increase-threshold", type=_positive,
                      help="LLVM's -ml-advisor-size-increase-threshold (default 2.0; "
                      "lifted for --policy default): the inliner stops asking once the "
                      "module grew by this factor")
    llvm.add_argument("compiler", nargs=argparse.REMAINDER,
                      help="-- COMPILER_COMMAND... (clang-19, opt-19 or llc-19)")

    serve = sub.add_parser("serve", help="serve a policy on a pipe channel or over gRPC")
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument("--pipe", help="channel base: BASE.in and BASE.out")
    where.add_argument("--grpc", metavar="ADDRESS",
                       help="serve mlbridge.v1.ModelService at unix:PATH or HOST:PORT")
    serve.add_argument("--allow-remote", action="store_true",
                       help="with --grpc: allow binding a non-loopback address")
    serve.add_argument("--tls-cert", help="with --grpc: serve TLS with this PEM certificate")
    serve.add_argument("--tls-key", help="with --grpc: the certificate's PEM key")
    serve.add_argument("--tls-client-ca",
                       help="with --grpc: require client certificates signed by this CA")
    _add_grpc_limits(serve)
    serve.add_argument("--policy", required=True)
    serve.add_argument("--advisor", choices=ADVISORS,
                       help="advisor, for the built-in policies default/always/never")
    serve.add_argument("--create", action="store_true",
                       help="create the FIFOs (mode 0600) first and remove them at exit")
    serve.add_argument("--max-requests", type=int,
                       help="stop after this many decisions in a session")
    serve.add_argument("--sessions", type=int, default=1,
                       help="sessions to serve one after the other (0: until killed)")
    serve.add_argument("--timeout", type=_positive,
                       help="give up when the compiler does not open or write for S seconds")
    serve.add_argument("--log", help="write an LLVM training log of the decisions")
    serve.add_argument("--stats-json", help="write the statistics of the sessions here")

    drive = sub.add_parser("drive", help="make the decisions of a compiler that serves "
                                         "mlbridge.v1.CompilerService (compiler as server)")
    drive.add_argument("--grpc", required=True, metavar="ADDRESS",
                       help="the compiler's address: unix:PATH or HOST:PORT")
    drive.add_argument("--policy", required=True)
    drive.add_argument("--advisor", choices=ADVISORS,
                       help="advisor, for the built-in policies default/always/never")
    drive.add_argument("--connect-timeout", type=_positive, default=30.0,
                       help="seconds to wait for the compiler's server")
    drive.add_argument("--tls-ca", help="TLS: the CA that signed the compiler's certificate")
    drive.add_argument("--tls-cert", help="TLS: this driver's certificate (PEM)")
    drive.add_argument("--tls-key", help="TLS: the key of --tls-cert (PEM)")

    log = sub.add_parser("log", help="training logs")
    log_sub = log.add_subparsers(dest="log_command", required=True)
    dump = log_sub.add_parser("dump", help="print a training log as text")
    dump.add_argument("file")

    demo = sub.add_parser("demo", help="compile bundled C programs with clang-19 -Oz "
                          "whose inlining a bundled Python policy decides")
    demo.add_argument("--keep", help="keep the build files in this directory")

    loop = sub.add_parser("loop", help="train-to-deploy on clang-19: collect, train, "
                          "export, AOT-compile, deploy through the plugin, measure, "
                          "search for smaller code")
    loop.add_argument("--out", default="loop-out", help="results directory")
    loop.add_argument("--quick", action="store_true",
                      help="small programs only (minutes -> seconds)")
    loop.add_argument("--es-iterations", type=int, default=8,
                      help="evolution-strategies iterations (0: skip the search)")
    loop.add_argument("--plugin", help="mlbridge-inline-advisor.so (default: build/)")
    loop.add_argument("--corpus", help="corpus directory (default: .cache/corpus)")
    loop.add_argument("--jobs", type=int, default=2, help="parallel compilations")
    loop.add_argument("--repeats", type=int, default=1,
                      help="rounds of deployment measurements (compile time: fastest)")
    return parser


def _policies(args: argparse.Namespace) -> Dict[str, object]:
    if len(args.policy) not in (1, len(args.advisor)):
        raise MlbridgeError(f"give one --policy, or one per --advisor "
                            f"({len(args.advisor)}), not {len(args.policy)}")
    specs = args.policy * len(args.advisor) if len(args.policy) == 1 else args.policy
    if len(set(args.advisor)) != len(args.advisor):
        raise MlbridgeError("an advisor is given twice")
    return {adv: load_policy(spec, adv) for adv, spec in zip(args.advisor, specs)}


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _cmd_llvm(args: argparse.Namespace) -> int:
    from mlbridge.llvm import run_compiler

    command = args.compiler[1:] if args.compiler[:1] == ["--"] else args.compiler
    if not command:
        raise MlbridgeError("no compiler command given (mlbridge llvm ... -- COMMAND...)")
    policies = _policies(args)
    with ExitStack() as stack:
        logs = {}
        if args.log:
            for adv in policies:
                path = args.log if len(policies) == 1 else f"{args.log}.{adv}"
                logs[adv] = stack.enter_context(open(path, "wb"))
        result = run_compiler(command, policies, timeout=args.timeout,
                              io_timeout=args.io_timeout, logs=logs,
                              include_default=args.include_default,
                              size_increase_threshold=args.size_increase_threshold,
                              echo_stderr=sys.stderr)
    if args.stats_json:
        with open(args.stats_json, "w") as out:
            json.dump(result.to_dict(), out, indent=2)
            out.write("\n")
    if result.error:
        print(f"mlbridge: error: {result.error}", file=sys.stderr)
        return _exit_code(result.returncode) or 1
    return _exit_code(result.returncode)


def _cmd_serve(args: argparse.Namespace) -> int:
    from mlbridge.channel import make_fifos
    from mlbridge.pipe_host import PipeHost

    policy = load_policy(args.policy, args.advisor)
    if args.grpc:
        return _serve_grpc(args, policy)
    all_stats: List[dict] = []
    with ExitStack() as stack:
        if args.create:
            stack.enter_context(make_fifos(args.pipe))
        log = stack.enter_context(open(args.log, "wb")) if args.log else None
        host = PipeHost(policy, open_timeout=args.timeout, io_timeout=args.timeout, log=log,
                        max_requests=args.max_requests)
        served = 0
        try:
            while args.sessions == 0 or served < args.sessions:
                all_stats.append(host.serve(args.pipe).to_dict())
                served += 1
        finally:
            if args.stats_json:
                with open(args.stats_json, "w") as out:
                    json.dump({"sessions": all_stats}, out, indent=2)
                    out.write("\n")
    return 0


def _serve_grpc(args: argparse.Namespace, policy: object) -> int:
    from mlbridge.grpc_server import AddressError, start_server

    credentials = None
    if args.tls_cert or args.tls_key or args.tls_client_ca:
        import grpc

        if not (args.tls_cert and args.tls_key):
            print("mlbridge serve: TLS needs both --tls-cert and --tls-key", file=sys.stderr)
            return 2
        with open(args.tls_cert, "rb") as cert, open(args.tls_key, "rb") as key:
            pair = (key.read(), cert.read())
        client_ca = None
        if args.tls_client_ca:
            with open(args.tls_client_ca, "rb") as ca:
                client_ca = ca.read()
        credentials = grpc.ssl_server_credentials(
            [pair], root_certificates=client_ca, require_client_auth=client_ca is not None)
    try:
        running = start_server(policy, args.grpc, allow_remote=args.allow_remote,
                               credentials=credentials, workers=args.workers,
                               max_streams=args.max_streams, max_sessions=args.max_sessions,
                               session_memory=args.session_memory,
                               max_message_bytes=args.max_message_bytes,
                               session_idle_timeout=args.session_idle_timeout,
                               stream_idle_timeout=args.stream_idle_timeout)
    except (AddressError, ValueError) as err:
        print(f"mlbridge serve: {err}", file=sys.stderr)
        return 2
    print(f"mlbridge serve: serving {args.policy} at {running.target}", file=sys.stderr)
    try:
        running.wait()
    except KeyboardInterrupt:
        running.stop()
    return 0


def _cmd_drive(args: argparse.Namespace) -> int:
    import grpc

    from mlbridge.grpc_driver import DriverError, drive

    credentials = None
    if args.tls_ca:
        def read(path: Optional[str]) -> Optional[bytes]:
            if path is None:
                return None
            with open(path, "rb") as f:
                return f.read()
        credentials = grpc.ssl_channel_credentials(read(args.tls_ca), read(args.tls_key),
                                                   read(args.tls_cert))
    try:
        stats = drive(args.grpc, load_policy(args.policy, args.advisor),
                      connect_timeout=args.connect_timeout, credentials=credentials)
    except (DriverError, grpc.RpcError, grpc.FutureTimeoutError) as err:
        print(f"mlbridge drive: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    print(f"mlbridge drive: {stats.decisions} decisions, {stats.errors_reported} policy "
          f"errors in {stats.seconds:.2f} s", file=sys.stderr)
    return 0


def _cmd_log(args: argparse.Namespace) -> int:
    from mlbridge.training_log import dump

    dump(args.file, sys.stdout)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from mlbridge.demo.run import run_demo

    return run_demo(keep=args.keep)


def _cmd_loop(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mlbridge.loop.run import run_loop, summary_markdown

    kwargs = {}
    if args.plugin:
        kwargs["plugin"] = Path(args.plugin)
    if args.corpus:
        kwargs["corpus"] = Path(args.corpus)
    results = run_loop(Path(args.out), quick=args.quick, es_iterations=args.es_iterations,
                       jobs=args.jobs, repeats=args.repeats, **kwargs)
    print(summary_markdown(results))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``mlbridge`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    handler = {"llvm": _cmd_llvm, "serve": _cmd_serve, "drive": _cmd_drive, "log": _cmd_log,
               "demo": _cmd_demo, "loop": _cmd_loop}[args.command]
    try:
        return handler(args)
    except BrokenPipeError:  # e.g. `mlbridge log dump f | head`: quietly stop
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (MlbridgeError, OSError) as err:
        print(f"mlbridge: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""The ``mlbridge`` command.

::

    mlbridge llvm --advisor inline --policy default [--log FILE] [--stats-json FILE]
                  [--timeout S] [--llvm N] -- clang-19 -Oz -c f.c
    mlbridge serve --pipe BASE --policy POLICY [--create] [--max-requests N]
    mlbridge drive --grpc ADDRESS --policy POLICY
    mlbridge log dump FILE
    mlbridge demo
    mlbridge loop [--quick] [--out DIR] [--corpus PATH]
    mlbridge corpus build --recipe NAME|FILE --out DIR | packages --recipe R | info CORPUS
    mlbridge train TASK [...] | mlbridge evaluate PROBLEM --policy FILE [--split S]
    mlbridge config [--prefix | --plugin | --phase-service | --deploy-replay |
                     --interactive-host | --cmake-dir | --libdir | --includedir |
                     --components | --llvm-major | --llvm-majors | --json] [--llvm N]
    mlbridge --version

Every failure is one line ``mlbridge COMMAND: error: MESSAGE`` on stderr and a
documented exit code (docs/cli.md, :mod:`mlbridge.cli_errors`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING, BinaryIO, Dict, List, Optional, Sequence

from mlbridge import __version__
from mlbridge.cli_errors import (
    ENVIRONMENT,
    POLICY_FAILED,
    USAGE,
    ArgumentParser,
    CommandError,
    fail,
    run_command,
    warn,
)
from mlbridge.corpus.cli import add_parser as add_corpus_parser
from mlbridge.corpus.cli import run as run_corpus
from mlbridge.llvm.versions import add_llvm_argument
from mlbridge.output_files import open_output_file
from mlbridge.policies import ADVISORS, PolicyError, load_policy
from mlbridge.policy import Policy
from mlbridge.train.cli import add_parser as add_train_parser
from mlbridge.train.cli import run as run_train
from mlbridge.train.evaluate_cli import add_parser as add_evaluate_parser
from mlbridge.train.evaluate_cli import run as run_evaluate

if TYPE_CHECKING:
    from mlbridge.llvm import RunResult


def _number(text: str, what: str) -> float:
    """``text`` as a finite float, else ArgumentTypeError naming ``what``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'")
    return value


def _seconds(text: str) -> float:
    """A duration in seconds: a finite number > 0."""
    return _number(text, "a positive number of seconds")


def _positive(text: str) -> float:
    """A factor: a finite number > 0."""
    return _number(text, "a positive number")


def _whole(text: str, least: int) -> int:
    """``text`` as an integer >= ``least``, else ArgumentTypeError."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {least}, got '{text}'")
    return value


def _count(text: str) -> int:
    """A whole number, at least 1."""
    return _whole(text, 1)


def _natural(text: str) -> int:
    """A whole number, at least 0."""
    return _whole(text, 0)


def _size(text: str) -> int:
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


def _add_grpc_limits(serve: argparse.ArgumentParser) -> None:
    """The limits of `serve --grpc` (mlbridge.grpc_sessions.ServerLimits)."""
    from mlbridge import grpc_sessions as limits

    group = serve.add_argument_group("limits of --grpc (see docs/grpc.md, Limits)")
    group.add_argument(
        "--workers",
        type=_count,
        default=limits.DEFAULT_WORKERS,
        help="server threads (default: %(default)s)",
    )
    group.add_argument(
        "--max-streams",
        type=_count,
        help=f"streams open at once (default: workers - "
        f"{limits.RESERVED_WORKERS}); more are refused at once",
    )
    group.add_argument(
        "--max-sessions",
        type=_count,
        default=limits.DEFAULT_MAX_SESSIONS,
        help="open unary sessions; when full the stalest idle one is "
        "evicted (default: %(default)s)",
    )
    group.add_argument(
        "--session-memory",
        type=_size,
        default=limits.DEFAULT_SESSION_MEMORY,
        help="bytes all sessions and streams may hold together, e.g. 512M (default: %(default)s)",
    )
    group.add_argument(
        "--max-message-bytes",
        type=_size,
        default=limits.DEFAULT_MAX_BYTES,
        help="largest request or reply (default: %(default)s)",
    )
    group.add_argument(
        "--session-idle-timeout",
        type=_seconds,
        default=limits.DEFAULT_SESSION_IDLE_TIMEOUT,
        help="drop unary sessions unused for S seconds (default: %(default)s)",
    )
    group.add_argument(
        "--stream-idle-timeout",
        type=_seconds,
        default=limits.DEFAULT_STREAM_IDLE_TIMEOUT,
        help="end streams whose client is silent for S seconds (default: %(default)s)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="mlbridge",
        description=__doc__.split("::")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mlbridge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    llvm = sub.add_parser(
        "llvm",
        help="run an LLVM compiler (19, or 16 through mlbridge's plugin) whose ML "
        "advisor(s) a policy serves",
    )
    llvm.add_argument(
        "--advisor",
        action="append",
        choices=ADVISORS,
        required=True,
        help="advisor to serve; repeat to serve evict and priority at once",
    )
    llvm.add_argument(
        "--policy",
        action="append",
        required=True,
        help="default | always | never | zeros | file.py:NAME | module:NAME; "
        "once for every advisor or once per --advisor",
    )
    llvm.add_argument(
        "--log",
        help="write an LLVM training log (features + decision); "
        "with several advisors, FILE.ADVISOR",
    )
    llvm.add_argument("--stats-json", help="write decisions, host cost, return code here")
    llvm.add_argument(
        "--timeout", type=_seconds, help="kill the compilation after S seconds (default: no limit)"
    )
    llvm.add_argument(
        "--io-timeout",
        type=_seconds,
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
        type=_positive,
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
        "--advisor",
        choices=ADVISORS,
        help="advisor, for the built-in policies default/always/never",
    )
    serve.add_argument(
        "--create",
        action="store_true",
        help="create the FIFOs (mode 0600) first and remove them at exit",
    )
    serve.add_argument(
        "--max-requests", type=_count, help="stop after this many decisions in a session"
    )
    serve.add_argument(
        "--sessions",
        type=_natural,
        default=1,
        help="sessions to serve one after the other (0: until killed)",
    )
    serve.add_argument(
        "--timeout",
        type=_seconds,
        help="give up when the compiler does not open or write for S seconds",
    )
    serve.add_argument("--log", help="write an LLVM training log of the decisions")
    serve.add_argument("--stats-json", help="write the statistics of the sessions here")

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
        "--advisor",
        choices=ADVISORS,
        help="advisor, for the built-in policies default/always/never",
    )
    drive.add_argument(
        "--connect-timeout",
        type=_seconds,
        default=30.0,
        help="seconds to wait for the compiler's server",
    )
    drive.add_argument("--tls-ca", help="TLS: the CA that signed the compiler's certificate")
    drive.add_argument("--tls-cert", help="TLS: this driver's certificate (PEM)")
    drive.add_argument("--tls-key", help="TLS: the key of --tls-cert (PEM)")

    log = sub.add_parser("log", help="training logs")
    log_sub = log.add_subparsers(dest="log_command", required=True)
    dump = log_sub.add_parser("dump", help="print a training log as text")
    dump.add_argument("file")

    demo = sub.add_parser(
        "demo",
        help="compile bundled C programs with clang-19 -Oz "
        "whose inlining a bundled Python policy decides",
    )
    demo.add_argument("--keep", help="keep the build files in this directory")

    loop = sub.add_parser(
        "loop",
        help="train-to-deploy on clang: collect, train, "
        "export, AOT-compile, deploy through the plugin, measure, "
        "search for smaller code",
    )
    loop.add_argument("--out", default="loop-out", help="results directory")
    loop.add_argument(
        "--quick", action="store_true", help="small programs only (minutes -> seconds)"
    )
    loop.add_argument(
        "--es-iterations",
        type=_natural,
        default=8,
        help="evolution-strategies iterations (0: skip the search)",
    )
    loop.add_argument(
        "--plugin",
        help="mlbridge-inline-advisor-llvmN.so (default: mlbridge config --plugin --llvm N)",
    )
    add_llvm_argument(loop, "of clang (default: the newest with mlbridge parts installed)")
    loop.add_argument(
        "--corpus",
        metavar="PATH",
        help="your programs: a directory of .c/.bc/.ll files (each top-level file "
        "and each subdirectory of them is one program), a compile_commands.json, "
        "or an MLGO corpus (corpus_description.json) (default: $MLBRIDGE_CORPUS, "
        "else ./.cache/corpus; see docs/corpus.md)",
    )
    loop.add_argument("--jobs", type=_count, default=2, help="parallel compilations")
    loop.add_argument(
        "--repeats",
        type=_count,
        default=1,
        help="rounds of deployment measurements (compile time: fastest)",
    )
    _add_config(sub)
    add_train_parser(sub, _natural)
    add_evaluate_parser(sub, _natural)
    add_corpus_parser(sub, _natural)
    return parser


def _add_config(sub: argparse._SubParsersAction) -> None:
    """``mlbridge config``: where the native half is (mlbridge.native)."""
    from mlbridge.native import CONFIG_FIELDS

    config = sub.add_parser(
        "config",
        help="where the native half is (the CMake package: "
        "plugin, libraries, headers), like llvm-config",
        description="Print where mlbridge's native half is: "
        "$MLBRIDGE_PREFIX, $MLBRIDGE_BUILD_DIR, this Python's prefix, "
        "pkg-config, /usr/local, /usr (docs/python-package.md). "
        "Several options: one answer a line, in their order.",
    )
    for field, what in CONFIG_FIELDS.items():
        config.add_argument(
            f"--{field.replace('_', '-')}",
            dest="fields",
            action="append_const",
            const=field,
            help=f"print {what}",
        )
    config.add_argument("--json", action="store_true", help="print everything as JSON")
    config.add_argument(
        "--model",
        metavar="NAME",
        help="print the ONNX file of a model mlbridge ships (inlining-size: docs/models.md)",
    )
    config.add_argument(
        "--aot",
        action="store_true",
        help="with --model: print its AOT-compiled module in the CMake package instead "
        "(for the plugins' aot runner)",
    )
    add_llvm_argument(config, "whose LLVM parts to answer (default: the newest installed)")


def _load_policy(spec: str, advisor: Optional[str]) -> Policy:
    """The policy ``spec`` names; a spec that names no usable policy is a usage error."""
    if spec.lower().endswith(".onnx") and importlib.util.find_spec("onnxruntime") is None:
        fail(
            f"serving the ONNX model {spec} needs the onnxruntime Python package, "
            f"which is not installed",
            ENVIRONMENT,
        )
    try:
        return load_policy(spec, advisor)
    except PolicyError as err:
        raise CommandError(f"--policy {spec}: {err}", USAGE) from None


def _policies(args: argparse.Namespace) -> Dict[str, Policy]:
    if len(args.policy) not in (1, len(args.advisor)):
        fail(
            f"give one --policy, or one per --advisor ({len(args.advisor)}), "
            f"not {len(args.policy)}",
            USAGE,
        )
    specs = args.policy * len(args.advisor) if len(args.policy) == 1 else args.policy
    if len(set(args.advisor)) != len(args.advisor):
        fail("an advisor is given twice", USAGE)
    return {adv: _load_policy(spec, adv) for adv, spec in zip(args.advisor, specs)}


def _exit_code(returncode: int) -> int:
    """A child's return code as a shell reports it (killed by signal N: 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def _require_executable(program: str, what: str, hint: str = "") -> None:
    """Fail with ENVIRONMENT when ``program`` is neither on PATH nor an executable path."""
    if shutil.which(program) is None:
        where = "is not an executable file" if os.sep in program else "is not on PATH"
        fail(f"{what} '{program}' {where}{hint}", ENVIRONMENT)


def _open_output(path: str, option: str) -> BinaryIO:
    """``path`` opened for writing; an OSError is one line naming ``option``."""
    try:
        return open_output_file(path)
    except OSError as err:
        raise CommandError(f"{option} {path}: cannot write: {err.strerror or err}") from None


#: What the warning of an advisor that was asked nothing suggests.
_NO_DECISION_HINTS = {
    "inline": "inlining decision (is the optimisation level -O0, or the ML inliner not enabled?)",
    "evict": "eviction decision (is the optimisation level -O0, or did register "
    "allocation never need to evict?)",
    "priority": "register priority decision (is the optimisation level -O0, or the "
    "greedy register allocator not used?)",
}


def _llvm_outcome(args: argparse.Namespace, result: RunResult) -> int:
    """Report a served compilation (one line at most per problem); its exit code."""
    from mlbridge.pipe_host import PolicyFailed

    failed = [run for run in result.advisors.values() if run.error]
    if result.timed_out:
        fail(f"the compilation ran longer than --timeout {args.timeout:g} s and was stopped")
    for run in failed:
        if isinstance(run.exception, PolicyFailed):
            what = str(run.exception)
            if not what.startswith("policy failed"):
                what = f"policy failed: {what}"
            fail(f"the {run.advisor} {what} (the compiler was stopped)", POLICY_FAILED)
    if failed:
        fail(f"{result.error} (the compiler was stopped)")
    if result.returncode == 0:
        for run in result.advisors.values():
            if run.stats.decisions == 0:
                warn(
                    "mlbridge llvm",
                    "the compiler asked no "
                    + _NO_DECISION_HINTS.get(run.advisor, f"{run.advisor} decision"),
                )
    return _exit_code(result.returncode)


def _cmd_llvm(args: argparse.Namespace) -> int:
    from mlbridge.llvm import run_compiler
    from mlbridge.llvm.temp_outputs import TempOutputs
    from mlbridge.llvm.versions import LlvmVersionError
    from mlbridge.native import NativeError

    command = args.compiler[1:] if args.compiler[:1] == ["--"] else args.compiler
    if not command:
        fail("no compiler command given (mlbridge llvm ... -- COMMAND...)", USAGE)
    _require_executable(command[0], "the compiler")
    policies = _policies(args)
    leftovers = TempOutputs(command)
    try:
        with ExitStack() as stack:
            logs = {}
            if args.log:
                for adv in policies:
                    path = args.log if len(policies) == 1 else f"{args.log}.{adv}"
                    logs[adv] = stack.enter_context(_open_output(path, "--log"))
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
        with _open_output(args.stats_json, "--stats-json") as out:
            out.write(json.dumps(result.to_dict(), indent=2).encode() + b"\n")
    return _llvm_outcome(args, result)


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


def _cmd_serve(args: argparse.Namespace) -> int:
    from mlbridge.channel import make_fifos
    from mlbridge.pipe_host import PipeHost, PolicyFailed

    if args.pipe:
        _check_pipe(args.pipe, args.create)
    policy = _load_policy(args.policy, args.advisor)
    if args.grpc:
        return _serve_grpc(args, policy)
    all_stats: List[dict] = []
    with ExitStack() as stack:
        if args.create:
            stack.enter_context(make_fifos(args.pipe))
        log = stack.enter_context(_open_output(args.log, "--log")) if args.log else None
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
                with _open_output(args.stats_json, "--stats-json") as out:
                    out.write(json.dumps({"sessions": all_stats}, indent=2).encode() + b"\n")
    return 0


def _read_file(path: Optional[str], what: str) -> Optional[bytes]:
    """The bytes of ``path`` (None for None); OSError as one line naming ``what``."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise CommandError(f"{what} {path}: {err.strerror or err}") from None


def _serve_grpc(args: argparse.Namespace, policy: Policy) -> int:
    from mlbridge.grpc_server import AddressError, start_server

    credentials = None
    if args.tls_cert or args.tls_key or args.tls_client_ca:
        import grpc

        if not (args.tls_cert and args.tls_key):
            fail("TLS needs both --tls-cert and --tls-key", USAGE)
        pair = (_read_file(args.tls_key, "--tls-key"), _read_file(args.tls_cert, "--tls-cert"))
        client_ca = _read_file(args.tls_client_ca, "--tls-client-ca")
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


def _cmd_drive(args: argparse.Namespace) -> int:
    import grpc
    from mlbridge.grpc_driver import DriverError, drive

    credentials = None
    if args.tls_ca:
        credentials = grpc.ssl_channel_credentials(
            _read_file(args.tls_ca, "--tls-ca"),
            _read_file(args.tls_key, "--tls-key"),
            _read_file(args.tls_cert, "--tls-cert"),
        )
    policy = _load_policy(args.policy, args.advisor)
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


def _cmd_log(args: argparse.Namespace) -> int:
    from mlbridge.errors import TrainingLogError
    from mlbridge.training_log import dump

    try:
        dump(args.file, sys.stdout)
    except TrainingLogError as err:
        fail(f"{args.file} is not a valid training log: {err}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from mlbridge.demo.run import run_demo

    _require_executable("clang-19", "the tool", " (Debian: apt-get install clang-19)")
    return run_demo(keep=args.keep)


def _cmd_loop(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mlbridge.llvm.versions import tools
    from mlbridge.loop.run import run_loop, summary_markdown
    from mlbridge.native import NativeError, plugin_path

    if args.corpus and not os.path.exists(args.corpus):
        fail(f"--corpus {args.corpus}: no such file or directory", USAGE)
    compilers = tools(args.llvm)
    for tool in (compilers.clang, "c++"):
        _require_executable(tool, "the tool", " (scripts/setup installs it)")
    try:
        plugin = Path(args.plugin) if args.plugin else plugin_path(llvm=compilers.major)
    except NativeError as err:
        raise CommandError(
            f"{err} (give --plugin, or see 'mlbridge config --help')", ENVIRONMENT
        ) from None
    if not plugin.is_file():
        fail(
            f"the plugin {plugin} does not exist (build it: scripts/setup, or give --plugin)",
            ENVIRONMENT,
        )
    results = run_loop(
        Path(args.out),
        plugin=plugin,
        corpus=Path(args.corpus) if args.corpus else None,
        quick=args.quick,
        es_iterations=args.es_iterations,
        jobs=args.jobs,
        repeats=args.repeats,
        llvm=compilers.major,
    )
    print(summary_markdown(results))
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    from mlbridge.native import NativeError, config_text

    if args.json and args.fields:
        fail("--json prints everything: give it alone", USAGE)
    if args.aot and not args.model:
        fail("--aot is for --model NAME", USAGE)
    if args.model:
        from mlbridge.errors import MlbridgeError
        from mlbridge.models import model_path

        if args.json or args.fields:
            fail("--model prints one path: give it alone (with --aot)", USAGE)
        try:
            print(model_path(args.model, aot=args.aot))
        except MlbridgeError as err:
            fail(str(err), ENVIRONMENT)
        return 0
    try:
        print(config_text(args.fields or [], as_json=args.json, llvm=args.llvm))
    except NativeError as err:
        fail(str(err), ENVIRONMENT)
    return 0


def _command_name(args: argparse.Namespace) -> str:
    """``mlbridge COMMAND`` (``mlbridge log dump``...), the prefix of its errors."""
    words = ["mlbridge", args.command]
    sub = getattr(args, f"{args.command}_command", None)
    if isinstance(sub, str):
        words.append(sub)
    return " ".join(words)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``mlbridge`` command; returns the exit code (docs/cli.md).

    Every failure is one line ``mlbridge COMMAND: error: MESSAGE`` on stderr
    (:func:`mlbridge.cli_errors.run_command`); usage errors exit 2 from here.
    """
    args = _parser().parse_args(argv)
    handler = {
        "llvm": _cmd_llvm,
        "serve": _cmd_serve,
        "drive": _cmd_drive,
        "log": _cmd_log,
        "demo": _cmd_demo,
        "loop": _cmd_loop,
        "config": _cmd_config,
        "train": run_train,
        "evaluate": run_evaluate,
        "corpus": run_corpus,
    }[args.command]
    return run_command(_command_name(args), lambda: handler(args))


if __name__ == "__main__":
    sys.exit(main())

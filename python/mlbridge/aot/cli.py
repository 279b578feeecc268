"""``mlbridge-aot``: compile an ONNX model to a C++17 header and source.

    mlbridge-aot policy.onnx -o gen/ [--class InlinerPolicy]
                 [--namespace my::models] [--input-shape x=1,64]
                 [--max-memory BYTES] [--inline-weights-limit BYTES]
                 [--always-write-weights]
    mlbridge-aot --list-ops
    mlbridge-aot --version

Every failure is one line ``mlbridge-aot: error: MESSAGE`` on stderr and a
documented exit code (docs/cli.md, :mod:`mlbridge.cli_errors`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Optional, Sequence

from mlbridge import __version__
from mlbridge.aot import (
    DEFAULT_INLINE_LIMIT,
    DEFAULT_MAX_MEMORY,
    AotError,
    compile_model,
    default_class_name,
    supported_ops,
)
from mlbridge.cli_errors import ENVIRONMENT, ArgumentParser, CommandError, fail, run_command

PROG = "mlbridge-aot"


def _shape(text: str) -> tuple:
    name, sep, dims = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, [int(d) for d in dims.split(",") if d.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected NAME=D0,D1,... (e.g. x=1,64), got '{text}'"
        ) from None


def _bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of bytes >= 0, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=PROG,
        description="Compile an ONNX model ahead of time into dependency-free C++17 "
        "(a header and a source with the weights embedded).",
    )
    p.add_argument("model", nargs="?", help="the .onnx file")
    p.add_argument("-o", "--output-dir", default=".", help="where to write CLASS.h/.cpp")
    p.add_argument(
        "--class", dest="class_name", help="C++ class name (default: from the file name)"
    )
    p.add_argument("--namespace", default="mlbridge_models", help="C++ namespace")
    p.add_argument(
        "--input-shape",
        action="append",
        type=_shape,
        default=[],
        metavar="NAME=D0,D1,...",
        help="pin the shape of an input with dynamic dimensions",
    )
    p.add_argument(
        "--max-memory",
        type=_bytes,
        default=DEFAULT_MAX_MEMORY,
        metavar="BYTES",
        help="bound on any tensor and on the model's buffers and constants "
        f"together (default: {DEFAULT_MAX_MEMORY})",
    )
    p.add_argument(
        "--inline-weights-limit",
        type=_bytes,
        default=DEFAULT_INLINE_LIMIT,
        metavar="BYTES",
        help="constants up to this size in all are C++ arrays in the source; "
        "beyond, they go to CLASS.weights.bin, assembled in with .incbin "
        f"(GCC or Clang, ELF) (default: {DEFAULT_INLINE_LIMIT})",
    )
    p.add_argument(
        "--always-write-weights",
        action="store_true",
        help="write CLASS.weights.bin even when it is not needed (empty), "
        "for build systems that want a fixed set of outputs",
    )
    p.add_argument("--list-ops", action="store_true", help="print the supported operators")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print what was written (silent otherwise, as build steps are)",
    )
    p.add_argument("--version", action="version", version=f"{PROG} (mlbridge) {__version__}")
    return p


def _compile(args: argparse.Namespace) -> int:
    """Compile ``args.model`` into ``args.output_dir``; failures as CommandError."""
    if importlib.util.find_spec("onnx") is None:
        fail(
            "reading ONNX models needs the onnx Python package, which is not installed", ENVIRONMENT
        )
    out = args.output_dir
    if os.path.exists(out) and not os.path.isdir(out):
        fail(f"-o {out}: exists and is not a directory")
    class_name = args.class_name or default_class_name(args.model)
    try:
        generated = compile_model(
            args.model,
            class_name=class_name,
            namespace=args.namespace,
            input_shapes=dict(args.input_shape),
            inline_weights_limit=args.inline_weights_limit,
            max_memory=args.max_memory,
        )
    except AotError as e:
        raise CommandError(str(e)) from None
    try:
        header, source = generated.write(out, always_write_weights=args.always_write_weights)
    except OSError as e:
        raise CommandError(
            f"cannot write {e.filename or out}: {e.strerror or e} (-o {out})"
        ) from None
    if args.verbose:
        g = generated.graph
        weights = (
            f"{len(generated.weights)} bytes of weights in {source.with_suffix('.weights.bin')}"
            if generated.weights
            else "weights inline"
        )
        print(
            f"{header}\n{source}\n{weights}\n{len(g.nodes)} nodes, "
            f"{len(g.args)} inputs, {len(g.results)} outputs"
        )
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``mlbridge-aot``; returns the exit code (docs/cli.md)."""
    p = _parser()
    args = p.parse_args(argv)
    if not args.list_ops and not args.model:
        p.error("the model is required")
    return run_command(PROG, lambda: _list_ops() if args.list_ops else _compile(args))


def _list_ops() -> int:
    """``--list-ops``: print the supported operators."""
    print(supported_ops())
    return 0


if __name__ == "__main__":
    sys.exit(main())

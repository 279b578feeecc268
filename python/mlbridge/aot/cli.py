"""``mlbridge-aot``: compile an ONNX model to a C++17 header and source.

    mlbridge-aot policy.onnx -o gen/ [--class InlinerPolicy]
                 [--namespace my::models] [--input-shape x=1,64]
                 [--max-memory BYTES] [--inline-weights-limit BYTES]
                 [--always-write-weights]
    mlbridge-aot --list-ops
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from mlbridge.aot import (DEFAULT_INLINE_LIMIT, DEFAULT_MAX_MEMORY, AotError, compile_model,
                          default_class_name, supported_ops)


def _shape(text: str) -> tuple:
    name, sep, dims = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, [int(d) for d in dims.split(",") if d.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected NAME=D0,D1,... (e.g. x=1,64), got '{text}'") from None


def _bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of bytes >= 0, got {value}")
    return value


def _printable(text: str) -> str:
    """``text`` without control characters (a model's names may hold any)."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="mlbridge-aot",
        description="Compile an ONNX model ahead of time into dependency-free C++17 "
                    "(a header and a source with the weights embedded).")
    p.add_argument("model", nargs="?", help="the .onnx file")
    p.add_argument("-o", "--output-dir", default=".", help="where to write CLASS.h/.cpp")
    p.add_argument("--class", dest="class_name",
                   help="C++ class name (default: from the file name)")
    p.add_argument("--namespace", default="mlbridge_models", help="C++ namespace")
    p.add_argument("--input-shape", action="append", type=_shape, default=[],
                   metavar="NAME=D0,D1,...",
                   help="pin the shape of an input with dynamic dimensions")
    p.add_argument("--max-memory", type=_bytes, default=DEFAULT_MAX_MEMORY, metavar="BYTES",
                   help="bound on any tensor and on the model's buffers and constants "
                        f"together (default: {DEFAULT_MAX_MEMORY})")
    p.add_argument("--inline-weights-limit", type=_bytes, default=DEFAULT_INLINE_LIMIT,
                   metavar="BYTES",
                   help="constants up to this size in all are C++ arrays in the source; "
                        "beyond, they go to CLASS.weights.bin, assembled in with .incbin "
                        f"(GCC or Clang, ELF) (default: {DEFAULT_INLINE_LIMIT})")
    p.add_argument("--always-write-weights", action="store_true",
                   help="write CLASS.weights.bin even when it is not needed (empty), "
                        "for build systems that want a fixed set of outputs")
    p.add_argument("--list-ops", action="store_true", help="print the supported operators")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print what was written (silent otherwise, as build steps are)")
    args = p.parse_args(argv)
    if args.list_ops:
        print(supported_ops())
        return 0
    if not args.model:
        p.error("the model is required")
    class_name = args.class_name or default_class_name(args.model)
    try:
        generated = compile_model(args.model, class_name=class_name,
                                  namespace=args.namespace,
                                  input_shapes=dict(args.input_shape),
                                  inline_weights_limit=args.inline_weights_limit,
                                  max_memory=args.max_memory)
        header, source = generated.write(args.output_dir,
                                         always_write_weights=args.always_write_weights)
    except AotError as e:
        print(f"mlbridge-aot: error: {_printable(str(e))}", file=sys.stderr)
        return 1
    if args.verbose:
        g = generated.graph
        weights = f"{len(generated.weights)} bytes of weights in " \
            f"{source.with_suffix('.weights.bin')}" if generated.weights \
            else "weights inline"
        print(f"{header}\n{source}\n{weights}\n{len(g.nodes)} nodes, "
              f"{len(g.args)} inputs, {len(g.results)} outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

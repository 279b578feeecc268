"""``mlbridge-aot``: compile an ONNX model to a C++17 header and source.

    mlbridge-aot policy.onnx -o gen/ [--class InlinerPolicy]
                 [--namespace my::models] [--input-shape x=1,64]
    mlbridge-aot --list-ops
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from mlbridge.aot import AotError, compile_model, default_class_name, supported_ops


def _shape(text: str) -> tuple:
    name, sep, dims = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, [int(d) for d in dims.split(",") if d.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected NAME=D0,D1,... (e.g. x=1,64), got '{text}'") from None


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
                                  input_shapes=dict(args.input_shape))
        header, source = generated.write(args.output_dir)
    except AotError as e:
        print(f"mlbridge-aot: error: {e}", file=sys.stderr)
        return 1
    if args.verbose:
        g = generated.graph
        print(f"{header}\n{source}\n{len(g.nodes)} nodes, "
              f"{len(g.args)} inputs, {len(g.results)} outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Generate python/mlbridge/proto/tensor_pb2.py from proto/mlbridge/v1/tensor.proto.

Run from anywhere as ``python tools/gen_proto.py`` (needs grpcio-tools). The
output is written only when its content changes, so running it twice is a
no-op. The generated file is gitignored; scripts/setup calls this script.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto" / "mlbridge" / "v1"
OUT_DIR = ROOT / "python" / "mlbridge" / "proto"
PROTOS = ("tensor.proto",)


def generate() -> int:
    """Compile every proto in PROTOS into OUT_DIR; return a process exit code."""
    try:
        from grpc_tools import protoc
    except ImportError:
        print("gen_proto: grpcio-tools is not installed "
              "(pip install 'grpcio-tools>=1.66,<1.69')", file=sys.stderr)
        return 1
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = ["protoc", f"-I{PROTO_DIR}", f"--python_out={tmp}"]
        args += [str(PROTO_DIR / name) for name in PROTOS]
        if protoc.main(args) != 0:
            print("gen_proto: protoc failed", file=sys.stderr)
            return 1
        for name in PROTOS:
            module = name[:-len(".proto")] + "_pb2.py"
            new = (Path(tmp) / module).read_bytes()
            target = OUT_DIR / module
            if target.exists() and target.read_bytes() == new:
                continue
            target.write_bytes(new)
            print(f"gen_proto: wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(generate())

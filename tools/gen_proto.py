#!/usr/bin/env python3
"""Generate the Python protobuf and gRPC modules from proto/mlbridge/v1/.

Writes python/mlbridge/v1/{tensor_pb2,model_service_pb2,model_service_pb2_grpc}.py
(importable as ``mlbridge.v1.*``, matching the protos' own import paths). Run
from anywhere as ``python tools/gen_proto.py`` (needs grpcio-tools). Files are
written only when their content changes, so running it twice is a no-op. The
generated files are gitignored; scripts/setup calls this script.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
OUT_ROOT = ROOT / "python"
PACKAGE_DIR = Path("mlbridge") / "v1"
PROTOS = ("tensor.proto", "model_service.proto")
INIT = '"""Generated protobuf and gRPC modules (tools/gen_proto.py; not committed)."""\n'


def _write_if_changed(target: Path, content: bytes) -> None:
    if target.exists() and target.read_bytes() == content:
        return
    target.write_bytes(content)
    print(f"gen_proto: wrote {target.relative_to(ROOT)}")


def generate() -> int:
    """Compile every proto in PROTOS; return a process exit code."""
    try:
        from grpc_tools import protoc
    except ImportError:
        print("gen_proto: grpcio-tools is not installed "
              "(pip install 'grpcio-tools>=1.66,<1.69')", file=sys.stderr)
        return 1
    out_dir = OUT_ROOT / PACKAGE_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_if_changed(out_dir / "__init__.py", INIT.encode())
    with tempfile.TemporaryDirectory() as tmp:
        args = ["protoc", f"-I{PROTO_ROOT}", f"--python_out={tmp}",
                f"--grpc_python_out={tmp}"]
        args += [str(PROTO_ROOT / PACKAGE_DIR / name) for name in PROTOS]
        if protoc.main(args) != 0:
            print("gen_proto: protoc failed", file=sys.stderr)
            return 1
        for produced in sorted((Path(tmp) / PACKAGE_DIR).glob("*.py")):
            _write_if_changed(out_dir / produced.name, produced.read_bytes())
    return 0


if __name__ == "__main__":
    sys.exit(generate())

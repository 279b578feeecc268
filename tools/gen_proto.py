#!/usr/bin/env python3
"""Generate the Python protobuf and gRPC modules from proto/mlbridge/v1/.

Writes python/mlbridge/v1/{tensor_pb2,model_service_pb2,model_service_pb2_grpc}.py
(importable as ``mlbridge.v1.*``, matching the protos' own import paths) with
python/build_proto.py, the helper that the package build (python/setup.py)
uses too. Run from anywhere as ``python tools/gen_proto.py`` (needs the pinned
grpcio-tools). Files are written only when their content changes, so running it
twice is a no-op. The generated files are gitignored; scripts/setup calls this
script (an editable install generates them too).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from build_proto import ProtoError, generate  # noqa: E402


def main() -> int:
    """Generate the modules into python/; return a process exit code."""
    try:
        generate(
            ROOT / "python", log=lambda path: print(f"gen_proto: wrote {path.relative_to(ROOT)}")
        )
    except ProtoError as err:
        print(f"gen_proto: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generate the protobuf and gRPC modules ``mlbridge.v1.*`` from proto/mlbridge/v1/.

A build helper, not part of the installed package: python/setup.py calls it
when building a wheel, an sdist or an editable install, and tools/gen_proto.py
calls it for the development tree. The modules are written as
``OUT_ROOT/mlbridge/v1/{tensor_pb2,model_service_pb2,model_service_pb2_grpc}.py``
(their import paths are the protos' own) only when their content changes, by
atomic replacement (a file hard-linked into an sdist tree is never modified).

The generated ``*_pb2_grpc.py`` refuses to run with a grpcio older than the
grpcio-tools that generated it, and ``*_pb2.py`` needs a protobuf runtime at
least as new as grpcio-tools' protoc: hence the one pinned grpcio-tools
(GRPC_TOOLS_VERSION, the floor of the package's grpcio requirement).
"""

from __future__ import annotations

import os
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable, List, Optional

#: The grpcio-tools that generates the modules ([build-system] requires pins it).
GRPC_TOOLS_VERSION = "1.68.1"
#: The proto/ directory of a source checkout (absent in an sdist).
PROTO_ROOT = Path(__file__).resolve().parent.parent / "proto"
PACKAGE_DIR = Path("mlbridge") / "v1"
PROTOS = ("tensor.proto", "model_service.proto")
GENERATED = (
    "__init__.py",
    "tensor_pb2.py",
    "tensor_pb2_grpc.py",
    "model_service_pb2.py",
    "model_service_pb2_grpc.py",
)
INIT = '"""Generated protobuf and gRPC modules (python/build_proto.py; not committed)."""\n'


class ProtoError(RuntimeError):
    """The modules cannot be generated (no grpcio-tools, protoc failed...)."""


def have_proto_sources(proto_root: Path = PROTO_ROOT) -> bool:
    """Whether ``proto_root`` holds every proto of PROTOS (a source checkout)."""
    return all((proto_root / PACKAGE_DIR / name).is_file() for name in PROTOS)


def have_generated(out_root: Path) -> bool:
    """Whether ``out_root/mlbridge/v1`` holds every generated module (an sdist)."""
    return all((out_root / PACKAGE_DIR / name).is_file() for name in GENERATED)


def _check_grpc_tools() -> None:
    try:
        installed: Optional[str] = version("grpcio-tools")
    except PackageNotFoundError:
        installed = None
    fix = f"pip install grpcio-tools=={GRPC_TOOLS_VERSION}"
    if installed is None:
        raise ProtoError(f"grpcio-tools is not installed ({fix})")
    if installed != GRPC_TOOLS_VERSION:
        raise ProtoError(
            f"grpcio-tools {installed} is installed, the modules are generated "
            f"with {GRPC_TOOLS_VERSION} ({fix})"
        )


def _replace_if_changed(target: Path, content: bytes) -> bool:
    """Write ``content`` to ``target`` through a new file; False when unchanged."""
    if target.is_file() and target.read_bytes() == content:
        return False
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    return True


def _run_protoc(proto_root: Path, out_dir: Path) -> None:
    from grpc_tools import protoc

    args = ["protoc", f"-I{proto_root}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"]
    args += [str(proto_root / PACKAGE_DIR / name) for name in PROTOS]
    if protoc.main(args) != 0:
        raise ProtoError(f"protoc failed on {proto_root / PACKAGE_DIR}")


def generate(
    out_root: Path, proto_root: Path = PROTO_ROOT, log: Optional[Callable[[Path], None]] = None
) -> List[Path]:
    """Compile PROTOS from ``proto_root`` into ``out_root/mlbridge/v1/``.

    Returns the files written (those whose content changed); ``log`` is
    called with each of them. Raises ProtoError.
    """
    if not have_proto_sources(proto_root):
        raise ProtoError(f"no {PACKAGE_DIR}/*.proto under {proto_root}")
    _check_grpc_tools()
    out_dir = out_root / PACKAGE_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = {"__init__.py": INIT.encode()}
    with tempfile.TemporaryDirectory() as tmp:
        _run_protoc(proto_root, Path(tmp))
        for produced in sorted((Path(tmp) / PACKAGE_DIR).glob("*.py")):
            outputs[produced.name] = produced.read_bytes()
    written = []
    for name, content in outputs.items():
        if _replace_if_changed(out_dir / name, content):
            written.append(out_dir / name)
            if log is not None:
                log(out_dir / name)
    return written

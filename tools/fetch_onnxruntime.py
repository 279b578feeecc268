"""Install the ONNX Runtime C/C++ API from pinned official binaries.

Debian 12 has no ONNX Runtime. The official builds travel on the npm
registry: `onnxruntime-node` carries the Linux x64 `libonnxruntime.so.1`
(ORT 1.30.0) and `com.github.asus4.onnxruntime` carries the official headers
(ORT API version 29, inside its iOS xcframework; headers of API version N work
with any library of version >= N). Both tarballs are pinned by version and
sha512 integrity. Output: .cache/onnxruntime/{include,lib} (CMake finds it
there; a system ONNX Runtime is preferred when one is installed).

    python tools/fetch_onnxruntime.py [--dest DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from npm_package import fetch_package

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = (
    "onnxruntime-node@1.30.0",
    "sha512-twhs1C2C/BFkz1yc5OY0KIU2GUq6DURO7hD4bx5Q2Qy3nAMJwRXW8xU3NVczE29VA9lol"
    "LOYepoD8fjTGOfIqw==",
    "package/bin/napi-v6/linux/x64/libonnxruntime.so.1",
)
HEADERS = (
    "com.github.asus4.onnxruntime@0.4.9",
    "sha512-BkzxduSZ9IkeDP6Q8lz2TFU2ie7hSSvS7ZIfzMooExoq0CNzJnuuGaUJ7IsojBgqO4ouD1jX"
    "ah8OYyJbCN29Fg==",
    "package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64_x86_64-simulator/"
    "onnxruntime.framework/Headers/",
)
VERSION = "1.30.0"


def fetch(dest: Path) -> Path:
    """Make sure dest holds include/ and lib/; return dest."""
    marker = dest / f"VERSION-{VERSION}"
    if marker.exists():
        return dest
    (dest / "include").mkdir(parents=True, exist_ok=True)
    (dest / "lib").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        spec, integrity, member = LIBRARY
        with tarfile.open(fetch_package(spec, integrity, Path(tmp))) as archive:
            source = archive.extractfile(member)
            if source is None:
                raise RuntimeError(f"{spec} has no {member}")
            (dest / "lib" / "libonnxruntime.so.1").write_bytes(source.read())
        link = dest / "lib" / "libonnxruntime.so"
        if not link.exists():
            os.symlink("libonnxruntime.so.1", link)
        spec, integrity, prefix = HEADERS
        with tarfile.open(fetch_package(spec, integrity, Path(tmp))) as archive:
            headers = [
                m
                for m in archive.getmembers()
                if m.name.startswith(prefix) and m.name.endswith(".h")
            ]
            if not headers:
                raise RuntimeError(f"{spec} has no headers under {prefix}")
            for member in headers:
                data = archive.extractfile(member)
                assert data is not None
                (dest / "include" / Path(member.name).name).write_bytes(data.read())
    marker.write_text(f"{LIBRARY[0]} + headers {HEADERS[0]}\n")
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=ROOT / ".cache" / "onnxruntime")
    args = parser.parse_args()
    try:
        path = fetch(args.dest)
    except (RuntimeError, subprocess.SubprocessError, OSError) as err:
        print(f"fetch_onnxruntime: {err}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

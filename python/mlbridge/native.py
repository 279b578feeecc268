"""Where the native half of mlbridge is (``mlbridge config``, like ``llvm-config``).

The wheel is pure Python; the C++ parts (the clang inline-advisor plugin,
the GCC 12 unroll plugin, the mlir-opt tiling plugin, the phase-ordering
service, the demo's replay program, the libraries, headers and CMake package)
come from the CMake package of the same version, which installs a manifest
``PREFIX/share/mlbridge/native.json``::

    {"version": "0.2.0", "components": ["core", "grpc", "onnx", "c", "gcc"],
     "gcc_plugin": "lib/mlbridge/mlbridge_gcc.so",
     "deploy_replay": "libexec/mlbridge/mlbridge-deploy-replay",
     "interactive_host": "bin/mlbridge-interactive-host",
     "cmake_dir": "lib/cmake/mlbridge", "libdir": "lib", "includedir": "include"}

and, for each LLVM major its LLVM parts were built for
(docs/llvm-versions.md), ``PREFIX/share/mlbridge/llvmN.json``::

    {"version": "0.2.0", "llvm_major": 19, "components": ["llvm", "mlir"],
     "plugin": "lib/mlbridge/mlbridge-inline-advisor-llvm19.so",
     "phase_service": "bin/mlbridge-phase-service-llvm19",
     "pipeline_clang": "bin/mlbridge-pipeline-clang-llvm19",
     "mlir_plugin": "lib/mlbridge/mlbridge-mlir-tiling-llvm19.so"}

(paths relative to PREFIX; a path key is absent when its part was not built).
The LLVM parts are those of the major asked for (``mlbridge config --llvm
16``), else of the newest installed. The prefix is, in this order:

1. ``$MLBRIDGE_PREFIX`` (an error when it holds no manifest);
2. ``$MLBRIDGE_BUILD_DIR``, a CMake build tree, for development: its
   ``src/llvm/mlbridge-inline-advisor-llvmN.so``, ``src/gcc/mlbridge_gcc.so``,
   ``src/mlir/mlbridge-mlir-tiling-llvmN.so``,
   ``src/llvm/mlbridge-phase-service-llvmN``,
   ``src/llvm/mlbridge-pipeline-clang-llvmN``, ``src/mlbridge-interactive-host``
   and ``examples/mlbridge-example-deploy-replay`` (no manifest, no CMake
   package);
3. ``sys.prefix`` (the package installed into this venv:
   ``cmake --install build --prefix .venv``);
4. ``pkg-config --variable=prefix mlbridge``, when pkg-config is installed;
5. ``/usr/local``, then ``/usr``.

The manifest is checked before use: types, and every path relative and inside
the prefix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from mlbridge import child_process
from mlbridge._version import __version__
from mlbridge.errors import MlbridgeError

#: The manifest, relative to the prefix.
MANIFEST = Path("share") / "mlbridge" / "native.json"
#: The manifest of the parts built for LLVM major N: its name, with N.
LLVM_MANIFEST = "llvm{}.json"
MAX_MANIFEST_BYTES = 64 * 1024
#: The path keys of an LLVM major's manifest (llvmN.json).
LLVM_PATH_KEYS = ("plugin", "mlir_plugin", "phase_service", "pipeline_clang")
#: The manifests' path keys, in the order ``mlbridge config`` prints them.
PATH_KEYS = (
    "plugin",
    "gcc_plugin",
    "mlir_plugin",
    "phase_service",
    "pipeline_clang",
    "deploy_replay",
    "interactive_host",
    "cmake_dir",
    "libdir",
    "includedir",
    "model_inlining_size",
    "model_pipeline_size",
)
#: What MLBRIDGE_BUILD_DIR provides, relative to the build tree ({} is the
#: LLVM major of the build's LLVM parts).
BUILD_TREE_PATHS = {
    "plugin": "src/llvm/mlbridge-inline-advisor-llvm{}.so",
    "gcc_plugin": "src/gcc/mlbridge_gcc.so",
    "mlir_plugin": "src/mlir/mlbridge-mlir-tiling-llvm{}.so",
    "phase_service": "src/llvm/mlbridge-phase-service-llvm{}",
    "pipeline_clang": "src/llvm/mlbridge-pipeline-clang-llvm{}",
    "deploy_replay": "examples/mlbridge-example-deploy-replay",
    "interactive_host": "src/mlbridge-interactive-host",
    "model_inlining_size": "models/mlbridge-model-inlining-size.so",
    "model_pipeline_size": "models/mlbridge-model-pipeline-size.so",
}
#: The LLVM majors mlbridge's LLVM parts build against (cmake/MlbridgeLlvmMajor.cmake).
LLVM_MAJORS = (16, 19)
FIX = (
    "install mlbridge's CMake package (cmake --install BUILD_DIR --prefix PREFIX) and "
    "set MLBRIDGE_PREFIX=PREFIX, or install it into this Python's prefix "
    f"({sys.prefix}); see docs/python-package.md"
)


class NativeError(MlbridgeError):
    """The native half is not found, its manifest is invalid, or a part is missing."""


@dataclass(frozen=True)
class Native:
    """A native installation (or build tree) found: absolute paths of its parts."""

    prefix: Path
    found_by: str
    version: str
    components: Tuple[str, ...]
    manifest: Optional[Path] = None
    plugin: Optional[Path] = None
    gcc_plugin: Optional[Path] = None
    mlir_plugin: Optional[Path] = None
    phase_service: Optional[Path] = None
    #: clang-19 with the pipeline in process (built with clang's C++ library).
    pipeline_clang: Optional[Path] = None
    deploy_replay: Optional[Path] = None
    interactive_host: Optional[Path] = None
    cmake_dir: Optional[Path] = None
    libdir: Optional[Path] = None
    includedir: Optional[Path] = None
    #: The shipped models, AOT-compiled (mlbridge.models; ``mlbridge config
    #: --model NAME --aot``).
    model_inlining_size: Optional[Path] = None
    model_pipeline_size: Optional[Path] = None
    #: The LLVM major of plugin, mlir_plugin, phase_service and
    #: pipeline_clang (None: no
    #: LLVM part installed), and every major with parts installed, newest first.
    llvm_major: Optional[int] = None
    llvm_majors: Tuple[int, ...] = ()

    def describe(self) -> str:
        """Where this installation is and how it was found, for messages."""
        if self.found_by == "MLBRIDGE_BUILD_DIR":
            return f"the build tree MLBRIDGE_BUILD_DIR={self.prefix}"
        return f"the mlbridge CMake package at {self.prefix} ({self.found_by})"

    def require(self, key: str) -> Path:
        """The path of part ``key`` (one of PATH_KEYS); NativeError when it
        was not built or is missing."""
        path: Optional[Path] = getattr(self, key)
        label = key.replace("_", "-")
        if key in LLVM_PATH_KEYS and self.llvm_major is not None:
            label += f" for LLVM {self.llvm_major}"
        if path is None:
            raise NativeError(f"{self.describe()} has no {label} ({self._why_absent(key)})")
        if not path.exists():
            raise NativeError(f"{self.describe()} lists {label} {path}, which does not exist")
        return path

    def _why_absent(self, key: str) -> str:
        if self.found_by != "MLBRIDGE_BUILD_DIR":
            return "not built, or not installed there"
        if key in BUILD_TREE_PATHS:
            major = "N" if self.llvm_major is None else self.llvm_major
            return f"no {self.prefix / BUILD_TREE_PATHS[key].format(major)}: build it first"
        return (
            "a build tree provides only the plugins, the phase-ordering service, the "
            "replay program and the shipped models: install the CMake package for the rest"
        )

    def to_json(self) -> Dict[str, Any]:
        """Everything known, as ``mlbridge config --json`` prints it."""

        def text(path: Optional[Path]) -> Optional[str]:
            return None if path is None else str(path)

        return {
            "version": self.version,
            "python_package_version": __version__,
            "prefix": str(self.prefix),
            "found_by": self.found_by,
            "manifest": text(self.manifest),
            "components": list(self.components),
            "llvm_major": self.llvm_major,
            "llvm_majors": list(self.llvm_majors),
            **{key: text(getattr(self, key)) for key in PATH_KEYS},
        }


def _bad(manifest: Path, what: str) -> NativeError:
    return NativeError(f"invalid manifest {manifest}: {what}")


def _shown(value: object) -> str:
    """An untrusted value, printable on one line and short."""
    text = ascii(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _load_json(manifest: Path) -> Dict[str, Any]:
    try:
        with open(manifest, "rb") as stream:
            raw = stream.read(MAX_MANIFEST_BYTES + 1)
    except OSError as err:
        raise NativeError(f"cannot read {manifest}: {err.strerror or err}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise _bad(manifest, f"larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise _bad(manifest, f"not JSON ({err})") from None
    if not isinstance(data, dict):
        raise _bad(manifest, "not a JSON object")
    return data


def _inside(prefix: Path, manifest: Path, key: str, value: object) -> Optional[Path]:
    """``prefix / value`` for a relative path that stays inside the prefix."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(manifest, f"'{key}' must be a string, got {_shown(value)}")
    relative = PurePosixPath(value)
    if not value or "\0" in value or relative.is_absolute() or ".." in relative.parts:
        raise _bad(
            manifest, f"'{key}' must be a relative path inside the prefix, got {_shown(value)}"
        )
    return prefix.joinpath(*relative.parts)


def _strings(manifest: Path, key: str, value: object) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(manifest, f"'{key}' must be a list of strings, got {_shown(value)}")
    return tuple(value)


def _installed_majors(prefix: Path) -> Tuple[int, ...]:
    """The N of every ``llvmN.json`` beside the manifest, newest first."""
    majors = []
    try:
        names = os.listdir(prefix / MANIFEST.parent)
    except OSError:
        return ()
    for name in names:
        digits = name[len("llvm") : -len(".json")]
        if name.startswith("llvm") and name.endswith(".json") and digits.isdigit():
            if len(digits) <= 3:
                majors.append(int(digits))
    return tuple(sorted(majors, reverse=True))


def pick_major(llvm: Optional[int], installed: Tuple[int, ...], where: str) -> Optional[int]:
    """``llvm`` when installed (NativeError if not), else the newest
    installed major (None: none is)."""
    if llvm is None:
        return installed[0] if installed else None
    if llvm not in installed:
        have = ", ".join(map(str, installed)) or "none"
        raise NativeError(
            f"{where} has no parts built for LLVM {llvm} (installed: {have}); build them "
            f"with -DMLBRIDGE_LLVM_VERSION={llvm} (docs/llvm-versions.md)"
        )
    return llvm


def read_manifest(prefix: Path, found_by: str, llvm: Optional[int] = None) -> Native:
    """The installation at ``prefix`` from its manifests, with the LLVM parts
    of major ``llvm`` (default: the newest installed); NativeError when a
    manifest is missing or invalid, or ``llvm`` is not installed."""
    prefix = Path(os.path.abspath(prefix))
    manifest = prefix / MANIFEST
    data = _load_json(manifest)
    version = data.get("version")
    if not isinstance(version, str) or not version or len(version) > 64:
        raise _bad(manifest, f"'version' must be a short string, got {_shown(version)}")
    components = _strings(manifest, "components", data.get("components", []))
    paths = {
        key: _inside(prefix, manifest, key, data.get(key))
        for key in PATH_KEYS
        if key not in LLVM_PATH_KEYS
    }
    installed = _installed_majors(prefix)
    major = pick_major(llvm, installed, f"the mlbridge CMake package at {prefix}")
    if major is not None:
        llvm_manifest = prefix / MANIFEST.parent / LLVM_MANIFEST.format(major)
        llvm_data = _load_json(llvm_manifest)
        if llvm_data.get("version") != version:
            raise _bad(
                llvm_manifest,
                f"version {_shown(llvm_data.get('version'))} is not {version}'s "
                f"(native.json): install both from one source tree",
            )
        if llvm_data.get("llvm_major") != major:
            raise _bad(llvm_manifest, f"'llvm_major' must be {major}")
        components += _strings(llvm_manifest, "components", llvm_data.get("components", []))
        for key in LLVM_PATH_KEYS:
            paths[key] = _inside(prefix, llvm_manifest, key, llvm_data.get(key))
    return Native(
        prefix,
        found_by,
        version,
        components,
        manifest,
        **paths,
        llvm_major=major,
        llvm_majors=installed,
    )


def _build_version(build: Path) -> str:
    """The project version in a build tree's CMakeCache.txt, or "unknown"."""
    try:
        for line in (build / "CMakeCache.txt").read_text(errors="replace").splitlines():
            if line.startswith("CMAKE_PROJECT_VERSION:"):
                return line.split("=", 1)[1].strip() or "unknown"
    except OSError:
        pass
    return "unknown"


def from_build_tree(build: Path, llvm: Optional[int] = None) -> Native:
    """The parts of a CMake build tree (MLBRIDGE_BUILD_DIR): the plugins, the
    phase-ordering service and the replay program where the build puts them,
    when they are there; its LLVM parts are for one major, ``llvm`` if given."""
    build = Path(os.path.abspath(build))
    if not build.is_dir():
        raise NativeError(f"MLBRIDGE_BUILD_DIR={build} is not a directory")
    built = tuple(
        major
        for major in sorted(LLVM_MAJORS, reverse=True)
        if any((build / BUILD_TREE_PATHS[key].format(major)).is_file() for key in LLVM_PATH_KEYS)
    )
    major = pick_major(llvm, built, f"the build tree MLBRIDGE_BUILD_DIR={build}")
    paths = {}
    for key, pattern in BUILD_TREE_PATHS.items():
        path = build / pattern.format(major)
        if (major is not None or key not in LLVM_PATH_KEYS) and path.is_file():
            paths[key] = path
    return Native(
        build,
        "MLBRIDGE_BUILD_DIR",
        _build_version(build),
        (),
        **paths,
        llvm_major=major,
        llvm_majors=built,
    )


def _pkg_config_prefix() -> Optional[Path]:
    if shutil.which("pkg-config") is None:
        return None
    try:
        done = child_process.run(
            ["pkg-config", "--variable=prefix", "mlbridge"],
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return Path(value) if done.returncode == 0 and value else None


def _candidates() -> Iterator[Tuple[str, Path]]:
    """The implicit prefixes, in order: (how found, prefix)."""
    yield "sys.prefix", Path(sys.prefix)
    pkg_config = _pkg_config_prefix()
    if pkg_config is not None:
        yield "pkg-config", pkg_config
    yield "/usr/local", Path("/usr/local")
    yield "/usr", Path("/usr")


def find_native(environ: Optional[Mapping[str, str]] = None, llvm: Optional[int] = None) -> Native:
    """The native installation, by the order of this module's docstring, with
    the LLVM parts of major ``llvm`` (default: the newest installed).

    ``environ``: the environment to read (default: os.environ). Raises
    NativeError, one line naming what was searched and how to fix it.
    """
    env = os.environ if environ is None else environ
    if env.get("MLBRIDGE_PREFIX"):
        prefix = Path(env["MLBRIDGE_PREFIX"])
        if not (prefix / MANIFEST).is_file():
            raise NativeError(f"MLBRIDGE_PREFIX={prefix} holds no {MANIFEST}: {FIX}")
        return read_manifest(prefix, "MLBRIDGE_PREFIX", llvm)
    if env.get("MLBRIDGE_BUILD_DIR"):
        return from_build_tree(Path(env["MLBRIDGE_BUILD_DIR"]), llvm)
    searched: List[str] = []
    for found_by, prefix in _candidates():
        prefix = Path(os.path.abspath(prefix))
        if str(prefix) in searched:
            continue
        searched.append(str(prefix))
        if (prefix / MANIFEST).is_file():
            return read_manifest(prefix, found_by, llvm)
    raise NativeError(
        f"mlbridge's native half not found (no {MANIFEST} in "
        f"{', '.join(searched)}; MLBRIDGE_PREFIX and MLBRIDGE_BUILD_DIR "
        f"unset): {FIX}"
    )


def plugin_path(environ: Optional[Mapping[str, str]] = None, llvm: Optional[int] = None) -> Path:
    """The inline-advisor plugin for clang/opt of LLVM ``llvm`` (default: the
    newest installed; ``mlbridge config --plugin [--llvm N]``)."""
    return find_native(environ, llvm).require("plugin")


def gcc_plugin_path(environ: Optional[Mapping[str, str]] = None) -> Path:
    """The GCC 12 unroll plugin (``mlbridge config --gcc-plugin``)."""
    return find_native(environ).require("gcc_plugin")


def mlir_plugin_path(
    environ: Optional[Mapping[str, str]] = None, llvm: Optional[int] = None
) -> Path:
    """The mlir-opt tiling pass plugin of LLVM ``llvm`` (default: the newest
    installed; ``mlbridge config --mlir-plugin``)."""
    return find_native(environ, llvm).require("mlir_plugin")


def phase_service_path(
    environ: Optional[Mapping[str, str]] = None, llvm: Optional[int] = None
) -> Path:
    """The phase-ordering compiler service built on LLVM ``llvm`` (default:
    the newest installed; ``mlbridge config --phase-service``)."""
    return find_native(environ, llvm).require("phase_service")


def pipeline_clang_path(
    environ: Optional[Mapping[str, str]] = None, llvm: Optional[int] = None
) -> Optional[Path]:
    """clang with the phase service's pipeline in process, built on LLVM
    ``llvm`` (default: the newest installed; ``mlbridge config
    --pipeline-clang``), or None when mlbridge was built without clang's C++
    library (the pipeline wrappers then run the service)."""
    return find_native(environ, llvm).pipeline_clang


def interactive_host_path(environ: Optional[Mapping[str, str]] = None) -> Path:
    """The C++ host of LLVM's interactive protocol (``mlbridge config --interactive-host``)."""
    return find_native(environ).require("interactive_host")


def deploy_replay_path(environ: Optional[Mapping[str, str]] = None) -> Path:
    """The demo's C++ replay program (``mlbridge config --deploy-replay``)."""
    return find_native(environ).require("deploy_replay")


#: The answers of ``mlbridge config --FIELD`` (``--cmake-dir`` for cmake_dir...).
CONFIG_FIELDS = {
    "prefix": "the installation prefix (or the build tree of MLBRIDGE_BUILD_DIR)",
    "components": "the components built, e.g. 'core grpc onnx c llvm'",
    "llvm_major": "the LLVM major of the LLVM parts answered (--llvm N, else the newest)",
    "llvm_majors": "the LLVM majors with parts installed, newest first",
    "plugin": "the clang/opt inline-advisor plugin (mlbridge-inline-advisor-llvmN.so)",
    "gcc_plugin": "the GCC 12 unroll plugin (mlbridge_gcc.so)",
    "mlir_plugin": "the mlir-opt tiling pass plugin (mlbridge-mlir-tiling-llvmN.so)",
    "phase_service": "the phase-ordering compiler service (mlbridge-phase-service-llvmN)",
    "pipeline_clang": "clang with the service's pipeline in process "
    "(mlbridge-pipeline-clang-llvmN; not built without clang's C++ library)",
    "deploy_replay": "the C++ replay program of the demo's deployment half (examples/demo)",
    "interactive_host": "the C++ host answering a stock LLVM tool's ML advisor "
    "(mlbridge-interactive-host)",
    "cmake_dir": "the CMake package's directory (-Dmlbridge_DIR=...)",
    "libdir": "the directory of the libraries",
    "includedir": "the directory of the headers",
}


def config_answer(native: Native, field: str) -> str:
    """One answer of ``mlbridge config --FIELD``."""
    if field == "prefix":
        return str(native.prefix)
    if field == "components":
        return " ".join(native.components)
    if field == "llvm_major":
        if native.llvm_major is None:
            raise NativeError(f"{native.describe()} has no LLVM part")
        return str(native.llvm_major)
    if field == "llvm_majors":
        return " ".join(map(str, native.llvm_majors))
    return str(native.require(field))


def config_text(
    fields: List[str],
    as_json: bool = False,
    environ: Optional[Mapping[str, str]] = None,
    llvm: Optional[int] = None,
) -> str:
    """What ``mlbridge config`` prints: the answers of ``fields``, one a line;
    everything as JSON with ``as_json``; a ``key: value`` summary when neither.
    ``llvm``: the LLVM major whose parts are answered (default: the newest)."""
    native = find_native(environ, llvm)
    if as_json:
        return json.dumps(native.to_json(), indent=2)
    if fields:
        return "\n".join(config_answer(native, field) for field in fields)
    return "\n".join(f"{key}: {_plain(value)}" for key, value in native.to_json().items())


def _plain(value: object) -> str:
    if value is None:
        return "-"
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)

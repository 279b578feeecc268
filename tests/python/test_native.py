"""mlbridge.native and ``mlbridge config``: finding the native half through its
manifests, checking them, the order of the places searched, and the LLVM
major whose parts are answered."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Dict, Iterator, Tuple

import pytest

from mlbridge import __version__, native
from mlbridge.cli import main
from mlbridge.native import MANIFEST, NativeError, find_native, read_manifest

FULL = {
    "version": "0.2.0",
    "components": ["core", "grpc", "onnx", "c"],
    "deploy_replay": "libexec/mlbridge/mlbridge-deploy-replay",
    "cmake_dir": "lib/cmake/mlbridge",
    "libdir": "lib",
    "includedir": "include",
}
#: The manifests of the parts built for LLVM 19 and 16 (16 has no MLIR plugin).
LLVM = {
    19: {
        "version": "0.2.0",
        "llvm_major": 19,
        "components": ["llvm", "mlir"],
        "plugin": "lib/mlbridge/mlbridge-inline-advisor-llvm19.so",
        "phase_service": "bin/mlbridge-phase-service-llvm19",
        "mlir_plugin": "lib/mlbridge/mlbridge-mlir-tiling-llvm19.so",
    },
    16: {
        "version": "0.2.0",
        "llvm_major": 16,
        "components": ["llvm"],
        "plugin": "lib/mlbridge/mlbridge-inline-advisor-llvm16.so",
        "phase_service": "bin/mlbridge-phase-service-llvm16",
    },
}


def _write(root: Path, name: str, manifest: object, create: bool) -> None:
    path = root / MANIFEST.parent / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    if create and isinstance(manifest, dict):
        for key in native.PATH_KEYS:
            if isinstance(manifest.get(key), str):
                part = root / manifest[key]
                part.parent.mkdir(parents=True, exist_ok=True)
                part.touch()


def make_prefix(
    root: Path,
    manifest: object = FULL,
    create: bool = True,
    llvm: Dict[int, object] = {19: LLVM[19]},  # noqa: B006 - never mutated
) -> Path:
    """A prefix whose manifest is ``manifest`` (JSON), with the manifests of
    ``llvm`` (major -> manifest) and, with ``create``, whose listed paths exist."""
    _write(root, MANIFEST.name, manifest, create)
    for major, llvm_manifest in llvm.items():
        _write(root, native.LLVM_MANIFEST.format(major), llvm_manifest, create)
    return root


@pytest.fixture
def only(monkeypatch: pytest.MonkeyPatch):
    """Make the implicit search look at the given prefixes only."""

    def search(*prefixes: Tuple[str, Path]) -> None:
        def candidates() -> Iterator[Tuple[str, Path]]:
            yield from prefixes

        monkeypatch.setattr(native, "_candidates", candidates)

    return search


def test_a_valid_manifest_gives_absolute_paths(tmp_path: Path) -> None:
    found = read_manifest(make_prefix(tmp_path), "test")
    assert found.version == "0.2.0"
    assert found.components == ("core", "grpc", "onnx", "c", "llvm", "mlir")
    assert found.require("plugin") == tmp_path / LLVM[19]["plugin"]
    assert found.llvm_major == 19 and found.llvm_majors == (19,)
    assert found.cmake_dir == tmp_path / "lib" / "cmake" / "mlbridge"
    shown = found.to_json()
    assert shown["python_package_version"] == __version__
    assert shown["deploy_replay"] == str(tmp_path / FULL["deploy_replay"])
    assert shown["phase_service"] == str(tmp_path / LLVM[19]["phase_service"])
    assert shown["llvm_major"] == 19 and shown["llvm_majors"] == [19]
    assert native.phase_service_path({"MLBRIDGE_PREFIX": str(tmp_path)}) == (
        tmp_path / "bin" / "mlbridge-phase-service-llvm19"
    )


def test_two_llvm_majors_side_by_side(tmp_path: Path) -> None:
    prefix = make_prefix(tmp_path, llvm=LLVM)
    newest = read_manifest(prefix, "test")
    assert newest.llvm_major == 19 and newest.llvm_majors == (19, 16)
    assert newest.require("mlir_plugin") == prefix / LLVM[19]["mlir_plugin"]
    older = read_manifest(prefix, "test", llvm=16)
    assert older.llvm_major == 16 and older.llvm_majors == (19, 16)
    assert older.components == ("core", "grpc", "onnx", "c", "llvm")
    assert older.require("plugin") == prefix / LLVM[16]["plugin"]
    assert native.plugin_path({"MLBRIDGE_PREFIX": str(prefix)}, llvm=16) == older.plugin
    with pytest.raises(NativeError, match="has no mlir-plugin for LLVM 16"):
        older.require("mlir_plugin")
    only_16 = make_prefix(tmp_path / "p16", llvm={16: LLVM[16]})
    with pytest.raises(NativeError, match=r"no parts built for LLVM 19 \(installed: 16\)"):
        read_manifest(only_16, "test", llvm=19)
    assert read_manifest(only_16, "test").llvm_major == 16


def test_absent_keys_are_parts_not_built(tmp_path: Path) -> None:
    found = read_manifest(
        make_prefix(tmp_path, {"version": "0.2.0", "components": ["core"]}, llvm={}), "test"
    )
    assert found.plugin is None and found.phase_service is None
    assert found.llvm_major is None and found.llvm_majors == ()
    with pytest.raises(NativeError, match="has no plugin"):
        found.require("plugin")
    with pytest.raises(NativeError, match="has no phase-service"):
        found.require("phase_service")
    with pytest.raises(NativeError, match="no parts built for LLVM 16 .installed: none"):
        read_manifest(tmp_path, "test", llvm=16)


def test_a_listed_part_that_is_missing_is_named(tmp_path: Path) -> None:
    found = read_manifest(make_prefix(tmp_path, FULL, create=False), "test")
    with pytest.raises(NativeError, match="deploy-replay .* does not exist"):
        found.require("deploy_replay")


L19 = LLVM[19]


@pytest.mark.parametrize(
    "manifest, llvm19, message",
    [
        (FULL, {**L19, "plugin": "../outside.so"}, "inside the prefix"),
        (FULL, {**L19, "plugin": "lib/../../outside.so"}, "inside the prefix"),
        ({**FULL, "libdir": "/usr/lib"}, L19, "inside the prefix"),
        ({**FULL, "includedir": ""}, L19, "inside the prefix"),
        (FULL, {**L19, "plugin": "lib/a\u0000b.so"}, "inside the prefix"),
        (FULL, {**L19, "plugin": ["lib/p.so"]}, "must be a string"),
        (FULL, {**L19, "phase_service": "/usr/bin/mlbridge-phase-service"}, "inside the prefix"),
        ({**FULL, "components": "core c"}, L19, "list of strings"),
        ({**FULL, "components": ["core", 1]}, L19, "list of strings"),
        (FULL, {**L19, "components": "llvm"}, "list of strings"),
        ({**FULL, "version": 2}, L19, "'version'"),
        ({"components": []}, L19, "'version'"),
        (FULL, {**L19, "version": "0.1.0"}, "install both from one source tree"),
        (FULL, {**L19, "llvm_major": 16}, "'llvm_major' must be 19"),
        (FULL, ["not", "an", "object"], "not a JSON object"),
        (["not", "an", "object"], L19, "not a JSON object"),
    ],
)
def test_invalid_manifests_are_refused(
    tmp_path: Path, manifest: object, llvm19: object, message: str
) -> None:
    make_prefix(tmp_path, manifest, create=False, llvm={19: llvm19})
    with pytest.raises(NativeError, match=message) as caught:
        read_manifest(tmp_path, "test")
    assert "\n" not in str(caught.value)


def test_malformed_and_huge_manifests_are_refused(tmp_path: Path) -> None:
    make_prefix(tmp_path)
    (tmp_path / MANIFEST).write_bytes(b'{"version": ')
    with pytest.raises(NativeError, match="not JSON"):
        read_manifest(tmp_path, "test")
    (tmp_path / MANIFEST).write_bytes(b" " * (native.MAX_MANIFEST_BYTES + 1))
    with pytest.raises(NativeError, match="larger than"):
        read_manifest(tmp_path, "test")


def test_mlbridge_prefix_comes_first_and_must_hold_a_manifest(tmp_path: Path, only) -> None:
    prefix = make_prefix(tmp_path / "p")
    only(("sys.prefix", make_prefix(tmp_path / "venv")))
    env = {"MLBRIDGE_PREFIX": str(prefix), "MLBRIDGE_BUILD_DIR": str(tmp_path)}
    found = find_native(env)
    assert found.prefix == prefix and found.found_by == "MLBRIDGE_PREFIX"
    with pytest.raises(NativeError, match="MLBRIDGE_PREFIX=.* holds no"):
        find_native({"MLBRIDGE_PREFIX": str(tmp_path / "empty")})


def test_the_build_tree_for_development(tmp_path: Path, only) -> None:
    only(("sys.prefix", make_prefix(tmp_path / "venv")))
    build = tmp_path / "build"
    for part in native.BUILD_TREE_PATHS.values():
        (build / part.format(16)).parent.mkdir(parents=True, exist_ok=True)
        (build / part.format(16)).touch()
    (build / "CMakeCache.txt").write_text("CMAKE_PROJECT_VERSION:STATIC=0.2.0\n")
    found = find_native({"MLBRIDGE_BUILD_DIR": str(build)})
    assert found.found_by == "MLBRIDGE_BUILD_DIR" and found.version == "0.2.0"
    assert found.llvm_major == 16 and found.llvm_majors == (16,)
    assert found.require("plugin") == build / "src/llvm/mlbridge-inline-advisor-llvm16.so"
    assert found.require("deploy_replay") == build / "examples/mlbridge-example-deploy-replay"
    assert found.require("phase_service") == build / "src/llvm/mlbridge-phase-service-llvm16"
    with pytest.raises(NativeError, match="build tree provides only"):
        found.require("cmake_dir")
    with pytest.raises(NativeError, match="no parts built for LLVM 19"):
        find_native({"MLBRIDGE_BUILD_DIR": str(build)}, llvm=19)
    with pytest.raises(NativeError, match="not a directory"):
        find_native({"MLBRIDGE_BUILD_DIR": str(tmp_path / "none")})


def test_implicit_prefixes_in_order(tmp_path: Path, only) -> None:
    first, second = tmp_path / "first", make_prefix(tmp_path / "second")
    first.mkdir()
    only(("sys.prefix", first), ("pkg-config", second), ("/usr", make_prefix(tmp_path / "u")))
    found = find_native({})
    assert found.prefix == second and found.found_by == "pkg-config"


def test_sys_prefix_is_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "prefix", str(make_prefix(tmp_path / "venv")))
    found = find_native({})
    assert found.found_by == "sys.prefix" and found.prefix == tmp_path / "venv"


def test_pkg_config_names_a_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = make_prefix(tmp_path / "opt")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "pkg-config"
    fake.write_text(f"#!/bin/sh\necho {prefix}/lib/pkgconfig/../..\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert native._pkg_config_prefix() == Path(f"{prefix}/lib/pkgconfig/../..")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "empty-venv"))
    found = find_native({})
    assert found.found_by == "pkg-config" and found.prefix == prefix


def test_nothing_found_is_one_line_naming_the_places_and_the_fix(tmp_path: Path, only) -> None:
    only(("sys.prefix", tmp_path / "a"), ("/usr", tmp_path / "b"))
    with pytest.raises(NativeError) as caught:
        find_native({})
    message = str(caught.value)
    assert "\n" not in message
    assert str(tmp_path / "a") in message and str(tmp_path / "b") in message
    assert "MLBRIDGE_PREFIX" in message and "cmake --install" in message


def test_config_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = make_prefix(tmp_path)
    monkeypatch.setenv("MLBRIDGE_PREFIX", str(prefix))
    assert (
        main(["config", "--prefix", "--plugin", "--components", "--cmake-dir", "--phase-service"])
        == 0
    )
    assert capsys.readouterr().out.splitlines() == [
        str(prefix),
        str(prefix / L19["plugin"]),
        "core grpc onnx c llvm mlir",
        str(prefix / "lib/cmake/mlbridge"),
        str(prefix / "bin/mlbridge-phase-service-llvm19"),
    ]
    assert main(["config", "--json"]) == 0
    shown: Dict[str, object] = json.loads(capsys.readouterr().out)
    assert shown["found_by"] == "MLBRIDGE_PREFIX" and shown["libdir"] == str(prefix / "lib")
    assert main(["config"]) == 0
    assert f"plugin: {prefix / L19['plugin']}" in capsys.readouterr().out


def test_config_llvm_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = make_prefix(tmp_path, llvm=LLVM)
    monkeypatch.setenv("MLBRIDGE_PREFIX", str(prefix))
    assert main(["config", "--llvm-majors", "--llvm-major", "--plugin"]) == 0
    assert capsys.readouterr().out.splitlines() == ["19 16", "19", str(prefix / L19["plugin"])]
    assert main(["config", "--llvm", "16", "--plugin", "--llvm-major"]) == 0
    assert capsys.readouterr().out.splitlines() == [str(prefix / LLVM[16]["plugin"]), "16"]
    assert main(["config", "--llvm", "16", "--mlir-plugin"]) == 4
    assert "no mlir-plugin for LLVM 16" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["config", "--llvm", "15", "--plugin"])
    assert "LLVM 15 is not supported" in capsys.readouterr().err


def test_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MLBRIDGE_PREFIX", str(tmp_path))
    assert main(["config", "--plugin"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("mlbridge config: error: MLBRIDGE_PREFIX=") and err.count("\n") == 1
    assert main(["config", "--json", "--plugin"]) == 2
    assert "give it alone" in capsys.readouterr().err

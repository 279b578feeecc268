"""Acceptance (issue 12): the wheel works when installed outside the checkout.

The wheel is built from a copy of python/ and proto/ as a clean clone has them
(no generated mlbridge/v1: the build generates it), then installed into fresh
venvs in a temporary directory: Python 3.11 (this venv's base interpreter)
with the ``aot`` and ``loop`` extras and python/constraints.txt, and Python
3.13, else 3.9, when one is found (or ``$MLBRIDGE_TEST_OTHER_PYTHON``), with
the ``aot`` extra and no constraints
(pip picks the newest releases the ranges allow for that Python), both from
wheels only. Every command runs from a directory outside the checkout, with no
MLBRIDGE_* variable but those a test sets.

the demo example (both halves) and ``mlbridge train inlining --method loop`` on a user's own
small corpus need the native half: the CMake package at
``$MLBRIDGE_TEST_NATIVE_PREFIX``, else one installed from build/ into the
temporary directory (``cmake --install build --prefix TMP/prefix``); they are
skipped, with the reason, when there is neither.

Slow: a few minutes, most of it pip installing numpy, grpcio, onnx, ONNX
Runtime and matplotlib into each venv once (the venvs are shared by the tests
of this module). MLBRIDGE_SKIP_WHEEL_TESTS=1 skips the module.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Sequence

import pytest

from mlbridge import __version__

ROOT = Path(__file__).resolve().parents[2]
#: The demo, an example run against the installed wheel (its imports are the
#: wheel's: the venv's working directory is outside the checkout).
DEMO = ROOT / "examples" / "demo" / "demo.py"
CONSTRAINTS = ROOT / "python" / "constraints.txt"
MANIFEST = Path("share") / "mlbridge" / "native.json"
GENERATED = (
    "mlbridge/v1/__init__.py",
    "mlbridge/v1/tensor_pb2.py",
    "mlbridge/v1/model_service_pb2.py",
    "mlbridge/v1/model_service_pb2_grpc.py",
)
INSTALL_TIMEOUT = 1800

pytestmark = pytest.mark.skipif(
    os.environ.get("MLBRIDGE_SKIP_WHEEL_TESTS") == "1", reason="MLBRIDGE_SKIP_WHEEL_TESTS=1"
)

POLICY = """
import numpy as np


def decide(features):
    return {"y": np.asarray([float(features["x"].sum())], np.float32)}
"""

CLIENT = """
import sys

import numpy as np

from mlbridge.grpc_client import ModelClient
from mlbridge.tensor_spec import TensorSpec

inputs, outputs = [TensorSpec("x", "int64_t", (3,))], [TensorSpec("y", "float", (1,))]
for streaming in (False, True):
    with ModelClient(sys.argv[1], inputs, outputs, streaming=streaming) as client:
        for i in range(5):
            y = client.evaluate({"x": np.asarray([i, 2, 3], np.int64)})["y"]
            assert y.tolist() == [float(i + 5)], y
print("client ok")
"""

#: A user's own corpus: two one-file programs and a program in a subdirectory.
CORPUS = {
    "checksum.c": """#include <stddef.h>
#include <stdint.h>
static uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t mix(uint32_t h, uint32_t k) {
  k *= 0xcc9e2d51u; k = rotl(k, 15); k *= 0x1b873593u; h ^= k;
  return rotl(h, 13) * 5 + 0xe6546b64u;
}
uint32_t checksum(const uint8_t *p, size_t n, uint32_t h) {
  for (size_t i = 0; i + 4 <= n; i += 4)
    h = mix(h, p[i] | p[i + 1] << 8 | p[i + 2] << 16 | (uint32_t)p[i + 3] << 24);
  return h ^ (h >> 16);
}
""",
    "matrix.c": """static double get(const double *m, int n, int i, int j) { return m[i * n + j]; }
static void set(double *m, int n, int i, int j, double v) { m[i * n + j] = v; }
static double dot(const double *a, const double *b, int n, int i, int j) {
  double s = 0;
  for (int k = 0; k < n; k++) s += get(a, n, i, k) * get(b, n, k, j);
  return s;
}
void matmul(const double *a, const double *b, double *c, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) set(c, n, i, j, dot(a, b, n, i, j));
}
""",
    "sorter/sort.h": "void sort_ints(int *v, int n);\nint is_sorted(const int *v, int n);\n",
    "sorter/sort.c": """#include "sort.h"
static void swap(int *a, int *b) { int t = *a; *a = *b; *b = t; }
static int part(int *v, int lo, int hi) {
  int p = v[hi], i = lo;
  for (int j = lo; j < hi; j++) if (v[j] < p) swap(&v[i++], &v[j]);
  swap(&v[i], &v[hi]);
  return i;
}
static void quick(int *v, int lo, int hi) {
  if (lo < hi) { int p = part(v, lo, hi); quick(v, lo, p - 1); quick(v, p + 1, hi); }
}
void sort_ints(int *v, int n) { quick(v, 0, n - 1); }
""",
    "sorter/check.c": """#include "sort.h"
static int ordered(int a, int b) { return a <= b; }
int is_sorted(const int *v, int n) {
  for (int i = 1; i < n; i++) if (!ordered(v[i - 1], v[i])) return 0;
  return 1;
}
""",
}


def _env(extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """This process's environment without anything that points into the
    checkout or configures mlbridge, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MLBRIDGE_")
        and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    env.update(extra or {})
    return env


def _run(
    command: Sequence[object],
    cwd: Path,
    timeout: float = 600,
    env: Optional[Mapping[str, str]] = None,
    check: bool = True,
) -> "subprocess.CompletedProcess[str]":
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=_env(env),
        text=True,
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and done.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, command))} exited {done.returncode}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


@dataclass
class Venv:
    """A fresh venv with the wheel installed."""

    root: Path
    version: str
    install_seconds: float
    #: A directory outside the checkout to run commands in.
    cwd: Path

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def run(
        self,
        command: str,
        *args: object,
        env: Optional[Mapping[str, str]] = None,
        timeout: float = 600,
        check: bool = True,
    ) -> "subprocess.CompletedProcess[str]":
        return _run([self.bin(command), *args], self.cwd, timeout, env, check)


def _copy_sources(dest: Path) -> Path:
    """python/ and proto/ as a clean clone has them; returns dest/python."""

    def ignore(directory: str, names: List[str]) -> List[str]:
        skip = {"__pycache__", "build", "dist", ".pytest_cache"}
        if Path(directory).name == "mlbridge":
            skip.add("v1")
        return [n for n in names if n in skip or n.endswith(".egg-info")]

    shutil.copytree(ROOT / "python", dest / "python", ignore=ignore)
    shutil.copytree(ROOT / "proto", dest / "proto")
    return dest / "python"


def _version_of(python: str) -> Optional[str]:
    """``X.Y`` of an interpreter that can make venvs, else None."""
    try:
        done = subprocess.run(
            [python, "-c", "import ensurepip, sys, venv; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _other_python() -> Optional[str]:
    """$MLBRIDGE_TEST_OTHER_PYTHON, else a Python 3.13, else 3.9, that can make venvs."""
    chosen = os.environ.get("MLBRIDGE_TEST_OTHER_PYTHON")
    if chosen:
        if _version_of(chosen) is None:
            pytest.fail(f"MLBRIDGE_TEST_OTHER_PYTHON={chosen} cannot make venvs")
        return chosen
    for version in ("3.13", "3.9"):
        pattern = os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")
        for candidate in [shutil.which(f"python{version}"), *sorted(glob.glob(pattern))]:
            if candidate and _version_of(candidate) == version:
                return candidate
    return None


def _base_python() -> str:
    """This venv's base interpreter (Python 3.11 in the dev venv)."""
    name = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    base = Path(sys.base_prefix) / "bin" / name
    return str(base) if base.exists() else sys.executable


def _make_venv(
    python: str, root: Path, wheel: Path, extras: str, constraints: bool, cwd: Path
) -> Venv:
    _run([python, "-m", "venv", root], cwd)
    args: List[object] = [
        root / "bin" / "python",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--only-binary=:all:",
        f"{wheel}[{extras}]",
    ]
    if constraints:
        args += ["-c", CONSTRAINTS]
    start = time.monotonic()
    _run(args, cwd, timeout=INSTALL_TIMEOUT)
    seconds = time.monotonic() - start
    version = _version_of(str(root / "bin" / "python")) or "?"
    print(f"\nwheel installed into a Python {version} venv in {seconds:.0f} s")
    return Venv(root, version, seconds, cwd)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wheel")
    assert ROOT not in path.resolve().parents, "the work directory must be outside the checkout"
    (path / "cwd").mkdir()
    return path


@pytest.fixture(scope="module")
def wheel(workdir: Path) -> Path:
    source = _copy_sources(workdir / "src")
    start = time.monotonic()
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            source,
            "-w",
            workdir / "dist",
        ],
        workdir,
    )
    built = list((workdir / "dist").glob("mlbridge_compiler-*.whl"))
    assert len(built) == 1, built
    print(
        f"\n{built[0].name}: {built[0].stat().st_size} bytes, built in "
        f"{time.monotonic() - start:.0f} s"
    )
    return built[0]


@pytest.fixture(scope="module")
def base_venv(workdir: Path, wheel: Path) -> Venv:
    return _make_venv(
        _base_python(),
        workdir / "venv-base",
        wheel,
        "aot,loop",
        constraints=True,
        cwd=workdir / "cwd",
    )


@pytest.fixture(scope="module")
def other_venv(workdir: Path, wheel: Path) -> Venv:
    python = _other_python()
    if python is None:
        pytest.skip("neither Python 3.13 nor 3.9 (with venv and ensurepip) is installed")
    return _make_venv(
        python, workdir / "venv-other", wheel, "aot", constraints=False, cwd=workdir / "cwd"
    )


@pytest.fixture(scope="module", params=["base", "other"])
def venv(request: pytest.FixtureRequest) -> Venv:
    """Each venv in turn: the tests every supported Python must pass."""
    return request.getfixturevalue(f"{request.param}_venv")


@pytest.fixture(scope="module")
def native_prefix(workdir: Path) -> Path:
    """The CMake package: $MLBRIDGE_TEST_NATIVE_PREFIX, else build/ installed."""
    given = os.environ.get("MLBRIDGE_TEST_NATIVE_PREFIX")
    if given:
        if not (Path(given) / MANIFEST).is_file():
            pytest.fail(f"MLBRIDGE_TEST_NATIVE_PREFIX={given} holds no {MANIFEST}")
        return Path(given)
    build = ROOT / "build"
    if not (build / "cmake_install.cmake").is_file() or shutil.which("cmake") is None:
        pytest.skip(
            "no native prefix: set MLBRIDGE_TEST_NATIVE_PREFIX or build build/ (scripts/setup)"
        )
    prefix = workdir / "prefix"
    done = _run(["cmake", "--install", build, "--prefix", prefix], workdir, check=False)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or ["?"]
        pytest.skip(f"cmake --install build failed: {lines[-1]}")
    if not (prefix / MANIFEST).is_file():
        pytest.skip(f"build/ installs no {MANIFEST} (configure it again: scripts/setup)")
    # The LLVM 16 parts scripts/setup builds, beside build/'s (docs/llvm-versions.md).
    other = ROOT / "build-llvm16"
    if (other / "cmake_install.cmake").is_file():
        _run(
            ["cmake", "--install", other, "--component", "llvm16", "--prefix", prefix],
            workdir,
            check=False,
        )
    return prefix


def _need_tools(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/setup installs them)")


@pytest.mark.slow
def test_wheel_carries_the_generated_modules_and_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in (
        *GENERATED,
        "mlbridge/py.typed",
        "mlbridge/_version.py",
        "mlbridge/corpus/bundled/expr.c",
        "mlbridge/aot/kernels.h",
        "mlbridge/corpus/recipes/debian-c.json",
        "mlbridge/models/inlining-size.onnx",
        "mlbridge/models/pipeline-size.onnx",
    ):
        assert name in names, name
    assert not any(n.startswith(("build_proto", "setup")) for n in names)
    metadata = (
        zipfile.ZipFile(wheel).read(f"mlbridge_compiler-{__version__}.dist-info/METADATA").decode()
    )
    assert "Name: mlbridge-compiler" in metadata
    assert f"Version: {__version__}" in metadata


@pytest.mark.slow
def test_sdist_carries_the_generated_modules(workdir: Path, wheel: Path) -> None:
    """A wheel built from the sdist alone (no proto/ beside it) has the same files."""
    if _run([sys.executable, "-m", "build", "--version"], workdir, check=False).returncode:
        pytest.skip("python -m build is not installed (the [dev] extra has it)")
    source = _copy_sources(workdir / "src-sdist")
    _run([sys.executable, "-m", "build", "--sdist", "--outdir", workdir / "sdist", source], workdir)
    (sdist,) = (workdir / "sdist").glob("mlbridge_compiler-*.tar.gz")
    unpacked = workdir / "unpacked"
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(unpacked, **safe)  # type: ignore[arg-type]
    for name in GENERATED:
        assert f"mlbridge_compiler-{__version__}/{name}" in names, name
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            unpacked / f"mlbridge_compiler-{__version__}",
            "-w",
            workdir / "dist-sdist",
        ],
        workdir,
    )
    (from_sdist,) = (workdir / "dist-sdist").glob("mlbridge_compiler-*.whl")
    assert sorted(zipfile.ZipFile(from_sdist).namelist()) == sorted(
        zipfile.ZipFile(wheel).namelist()
    )


@pytest.mark.slow
def test_editable_install_generates_the_modules_in_the_tree(workdir: Path) -> None:
    """``pip install -e python/`` (scripts/setup) writes python/mlbridge/v1/."""
    source = _copy_sources(workdir / "src-editable")
    root = workdir / "venv-editable"
    _run([_base_python(), "-m", "venv", root], workdir)
    _run(
        [root / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-deps", "-e", source],
        workdir,
        timeout=INSTALL_TIMEOUT,
    )
    for name in GENERATED:
        assert (source / name).is_file(), name
    origin = _run(
        [
            root / "bin" / "python",
            "-c",
            "import importlib.util; print(importlib.util.find_spec('mlbridge').origin)",
        ],
        workdir,
    ).stdout
    assert Path(origin.strip()) == source / "mlbridge" / "__init__.py"


@pytest.mark.slow
def test_version(venv: Venv) -> None:
    assert venv.run("mlbridge", "--version").stdout.strip() == f"mlbridge {__version__}"
    shown = venv.run(
        "python",
        "-c",
        "import importlib.metadata as m, mlbridge; "
        "print(mlbridge.__version__, m.version('mlbridge-compiler'))",
    ).stdout
    assert shown.split() == [__version__, __version__]


def test_imports_from_the_venv_with_package_data(venv: Venv) -> None:
    out = venv.run(
        "python",
        "-c",
        "import mlbridge, mlbridge.v1.model_service_pb2_grpc; "
        "from mlbridge.corpus.defaults import bundled_programs; "
        "print(mlbridge.__file__); "
        "print(' '.join(p.name for p in bundled_programs()))",
    ).stdout.splitlines()
    assert Path(out[0]).is_relative_to(venv.root)
    assert out[1].split() == ["demo-expr", "demo-hashtable", "demo-kernels"]
    packages = venv.run("mlbridge", "corpus", "packages", "--recipe", "debian-c").stdout.split()
    assert len(packages) >= 30 and "libyaml" in packages


@pytest.mark.slow
def test_serve_grpc_with_a_client(venv: Venv, tmp_path: Path) -> None:
    policy, client = tmp_path / "policy.py", tmp_path / "client.py"
    policy.write_text(POLICY)
    client.write_text(CLIENT)
    socket = tmp_path / "s"
    server = _serve(venv, ["--grpc", f"unix:{socket}", "--policy", f"{policy}:decide"], socket)
    try:
        assert venv.run("python", client, f"unix:{socket}").stdout.strip() == "client ok"
    finally:
        server.terminate()
        server.wait(30)


def _serve(venv: Venv, args: Sequence[object], ready: Path) -> "subprocess.Popen[bytes]":
    """`mlbridge serve ARGS` from the venv, once ``ready`` exists (its
    stderr goes to ``ready``.log; the caller terminates it)."""
    log = Path(f"{ready}.log")
    with open(log, "w") as stderr:
        server = subprocess.Popen(
            [str(venv.bin("mlbridge")), "serve", *map(str, args)],
            cwd=venv.cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if server.poll() is not None or time.monotonic() >= deadline:
            server.kill()
            server.wait(30)
            pytest.fail(f"mlbridge serve is not ready after 60 s: {log.read_text()}")
        time.sleep(0.1)
    return server


def test_mlbridge_aot_compiles_a_model(venv: Venv, onnx_models: Path, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    venv.run("mlbridge-aot", onnx_models / "mlp.onnx", "-o", out)
    sources = sorted(out.glob("*.cpp"))
    assert sources and sorted(out.glob("*.h"))
    if shutil.which("c++"):
        _run(
            ["c++", "-std=c++17", "-O0", "-c", "-I", out, sources[0], "-o", tmp_path / "model.o"],
            tmp_path,
        )


def _fake_prefix(
    root: Path, manifest: Dict[str, object], llvm19: Optional[Dict[str, object]] = None
) -> Path:
    (root / MANIFEST).parent.mkdir(parents=True)
    (root / MANIFEST).write_text(json.dumps(manifest))
    if llvm19 is not None:
        (root / MANIFEST.parent / "llvm19.json").write_text(json.dumps(llvm19))
    return root


@pytest.mark.slow
def test_config_against_a_fake_prefix(venv: Venv, tmp_path: Path) -> None:
    plugin = "lib/mlbridge/mlbridge-inline-advisor-llvm19.so"
    prefix = _fake_prefix(
        tmp_path / "prefix",
        {"version": __version__, "components": ["core"], "libdir": "lib"},
        {"version": __version__, "llvm_major": 19, "components": ["llvm"], "plugin": plugin},
    )
    (prefix / "lib" / "mlbridge").mkdir(parents=True)
    (prefix / plugin).write_bytes(b"")
    env = {"MLBRIDGE_PREFIX": str(prefix)}
    lines = venv.run("mlbridge", "config", "--plugin", "--components", env=env).stdout
    assert lines.splitlines() == [str(prefix / plugin), "core llvm"]
    missing = venv.run("mlbridge", "config", "--deploy-replay", env=env, check=False)
    assert missing.returncode == 4 and len(missing.stderr.splitlines()) == 1
    escaping = _fake_prefix(
        tmp_path / "bad",
        {"version": "1"},
        {"version": "1", "llvm_major": 19, "plugin": "../../etc/passwd"},
    )
    bad = venv.run(
        "mlbridge", "config", "--json", env={"MLBRIDGE_PREFIX": str(escaping)}, check=False
    )
    assert bad.returncode == 4 and "inside the prefix" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr


def test_config_json_against_the_native_prefix(base_venv: Venv, native_prefix: Path) -> None:
    shown = json.loads(
        base_venv.run(
            "mlbridge", "config", "--json", env={"MLBRIDGE_PREFIX": str(native_prefix)}
        ).stdout
    )
    assert shown["version"] == __version__ and shown["found_by"] == "MLBRIDGE_PREFIX"
    assert Path(shown["prefix"]) == native_prefix
    assert "core" in shown["components"]
    for key in ("plugin", "deploy_replay", "cmake_dir", "libdir", "includedir"):
        if shown[key] is not None:
            assert Path(shown[key]).exists(), key


def _agreements(text: str) -> Iterator[bool]:
    for agreed, total in re.findall(r"agrees (\d+)/(\d+)", text):
        yield agreed == total and int(total) > 0


@pytest.mark.slow
def test_demo_runs_both_halves(base_venv: Venv, native_prefix: Path) -> None:
    _need_tools("clang-19")
    done = base_venv.run("python", DEMO, env={"MLBRIDGE_PREFIX": str(native_prefix)})
    assert "expr.c" in done.stdout and "skipped" not in done.stdout
    assert list(_agreements(done.stdout)) == [True, True], done.stdout


@pytest.mark.slow
def test_demo_without_the_native_half_says_why(base_venv: Venv, tmp_path: Path) -> None:
    _need_tools("clang-19")
    done = base_venv.run("python", DEMO, env={"MLBRIDGE_BUILD_DIR": str(tmp_path)})
    skipped = [line for line in done.stdout.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and "deployment half skipped" in skipped[0], done.stdout
    assert "expr.c" in done.stdout


@pytest.mark.slow
def test_loop_quick_on_a_users_own_corpus(
    base_venv: Venv, native_prefix: Path, tmp_path: Path
) -> None:
    _need_tools("clang-19", "llvm-size-19", "c++")
    corpus = tmp_path / "my-programs"
    for name, text in CORPUS.items():
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(text)
    out = tmp_path / "loop-out"
    done = base_venv.run(
        "mlbridge",
        "train",
        "inlining",
        "--method",
        "loop",
        "--corpus",
        corpus,
        "--es-iterations",
        "1",
        "--out",
        out,
        timeout=1200,
        env={"MLBRIDGE_PREFIX": str(native_prefix)},
    )
    assert "always training" in done.stderr
    programs = json.loads((out / "results.json").read_text())["programs"]
    assert set(programs["bundled"]) <= set(programs["train"])
    assert programs["held_out"]
    assert sorted(programs["train"] + programs["held_out"]) == sorted(
        programs["bundled"] + ["checksum.c", "matrix.c", "sorter"]
    )
    assert (out / "summary.md").read_text().startswith("# mlbridge loop")


@pytest.mark.slow
def test_clang_16_served_through_the_installed_llvm_16_plugin(
    base_venv: Venv, native_prefix: Path, tmp_path: Path
) -> None:
    """The wheel's ``mlbridge llvm`` on clang-16 (no interactive mode): the
    installed plugin for LLVM 16 serves LLVM's decision back, byte for byte."""
    _need_tools("clang-16")
    if not (native_prefix / "share" / "mlbridge" / "llvm16.json").is_file():
        pytest.skip("no LLVM 16 parts installed (scripts/setup builds build-llvm16/)")
    env = {"MLBRIDGE_PREFIX": str(native_prefix)}
    majors = base_venv.run("mlbridge", "config", "--llvm-majors", env=env).stdout.split()
    assert majors == ["19", "16"]
    source = ROOT / "python" / "mlbridge" / "corpus" / "bundled" / "hashtable.c"
    plain, served = tmp_path / "plain.o", tmp_path / "served.o"
    _run(["clang-16", "-Oz", "-c", source, "-o", plain], base_venv.cwd, 120)
    stats = tmp_path / "stats.json"
    base_venv.run(
        "mlbridge", "llvm", "--problem", "inlining", "--policy", "default", "--stats-json", stats,
        "--", "clang-16", "-Oz", "-c", source, "-o", served, env=env,
    )  # fmt: skip
    assert served.read_bytes() == plain.read_bytes()
    report = json.loads(stats.read_text())
    assert report["problems"]["inlining"]["decisions"] > 0
    assert (
        f"-fpass-plugin={native_prefix}/lib/mlbridge/mlbridge-inline-advisor-llvm16.so"
        in (report["command"])
    )


def test_plugin_served_over_shared_memory_from_the_installed_halves(
    base_venv: Venv, native_prefix: Path, tmp_path: Path
) -> None:
    """The installed plugin asks the wheel's host over the shm protocol:
    LLVM's own decision served back gives clang -Oz's object, byte for byte."""
    _need_tools("clang-19")
    manifest = json.loads((native_prefix / MANIFEST).read_text())
    if "plugin" not in manifest:
        pytest.skip("the native prefix has no plugin (built without LLVM)")
    plugin = native_prefix / manifest["plugin"]
    source = tmp_path / "calls.c"
    source.write_text(
        "static int sq(int x) { return x * x; }\n"
        "static int cube(int x) { return sq(x) * x; }\n"
        "int f(int a, int b) { return sq(a) + cube(b) - sq(a + b); }\n"
    )
    channel = tmp_path / "inline"
    server = _serve(
        base_venv,
        ["--pipe", channel, "--create", "--sessions", "0", "--policy", "default"]
        + ["--problem", "inlining"],
        Path(f"{channel}.out"),
    )
    try:
        objects = []
        for name, flags, env in (
            ("plain.o", [], {}),
            (
                "served.o",
                [f"-fpass-plugin={plugin}", f"-fplugin={plugin}"],
                {
                    "MLBRIDGE_INLINE_RUNNER": f"pipe:{channel},protocol=shm",
                    "MLBRIDGE_INLINE_STATS": str(tmp_path / "s.jsonl"),
                },
            ),
        ):
            out = tmp_path / name
            _run(["clang-19", "-Oz", "-c", source, "-o", out, *flags], base_venv.cwd, 120, env)
            objects.append(out.read_bytes())
        assert objects[0] == objects[1]
        stats = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
        assert stats and stats[-1]["decisions"] > 0 and stats[-1]["fallbacks"] == 0, stats
    finally:
        server.terminate()
        server.wait(30)


@pytest.mark.slow
def test_the_shipped_size_model_decides_in_clang_from_both_packages(
    base_venv: Venv, native_prefix: Path, tmp_path: Path
) -> None:
    """``mlbridge config --model inlining-size [--aot]`` finds the model in
    the wheel and its AOT module in the CMake package; the installed plugin
    runs either in clang-19 -Oz (the documented command of docs/models.md),
    asks it at every call site, and the two give the same object."""
    _need_tools("clang-19")
    env = {"MLBRIDGE_PREFIX": str(native_prefix)}
    onnx = Path(base_venv.run("mlbridge", "config", "--model", "inlining-size").stdout.strip())
    assert onnx.is_relative_to(base_venv.root) and onnx.suffix == ".onnx"
    aot = base_venv.run("mlbridge", "config", "--model", "inlining-size", "--aot", env=env)
    module = Path(aot.stdout.strip())
    assert module.is_relative_to(native_prefix) and module.is_file()
    unknown = base_venv.run("mlbridge", "config", "--model", "nope", env=env, check=False)
    assert unknown.returncode == 4 and "inlining-size" in unknown.stderr
    plugin = Path(base_venv.run("mlbridge", "config", "--plugin", env=env).stdout.strip())
    source = ROOT / "python" / "mlbridge" / "corpus" / "bundled" / "hashtable.c"
    objects = []
    for runner, model in (("onnx", onnx), ("aot", module)):
        out, stats = tmp_path / f"{runner}.o", tmp_path / f"{runner}.jsonl"
        flags = [f"-fpass-plugin={plugin}", "-c", source, "-o", out]
        settings = {
            "MLBRIDGE_INLINE_RUNNER": runner,
            "MLBRIDGE_INLINE_MODEL": str(model),
            "MLBRIDGE_INLINE_STATS": str(stats),
        }
        _run(["clang-19", "-Oz", *flags], base_venv.cwd, 120, settings)
        report = [json.loads(line) for line in stats.read_text().splitlines()]
        assert report and report[-1]["decisions"] > 0 and report[-1]["fallbacks"] == 0, report
        objects.append(out.read_bytes())
    assert objects[0] == objects[1]


@pytest.mark.slow
def test_the_shipped_pipeline_model_builds_a_program_from_both_packages(
    base_venv: Venv, native_prefix: Path, tmp_path: Path
) -> None:
    """``mlbridge wrap --runner aot:$(mlbridge config --model pipeline-size
    --aot) --max-steps 1 --no-baseline`` (docs/models.md, "Using it"): the
    installed wrappers build a program whose every unit the model chose a
    pipeline for (one answered decision, no fallback), which runs; the
    wheel's ONNX model gives the same object. The wrappers run the
    CMake package's ``mlbridge-pipeline-clang``."""
    _need_tools("clang-19")
    env = {"MLBRIDGE_PREFIX": str(native_prefix)}
    onnx = base_venv.run("mlbridge", "config", "--model", "pipeline-size").stdout.strip()
    aot = base_venv.run("mlbridge", "config", "--model", "pipeline-size", "--aot", env=env)
    module = Path(aot.stdout.strip())
    assert module.is_relative_to(native_prefix) and module.is_file()
    source = tmp_path / "main.c"
    source.write_text(
        "#include <stdio.h>\nstatic int sq(int x) { return x * x; }\n"
        'int main(void) { printf("%d\\n", sq(6) + 6); return 0; }\n'
    )
    objects = []
    for runner in (f"aot:{module}", f"onnx:{onnx}"):
        kind = runner.split(":")[0]
        wrap = ["mlbridge", "wrap", "--out", str(tmp_path / kind), "--runner", runner]
        lines = base_venv.run(*wrap, "--max-steps", "1", "--no-baseline", env=env).stdout
        cc = dict(line.split("=", 1) for line in lines.splitlines())["CC"]
        # the installed clang with the pipeline in process runs it
        driver = native_prefix / "bin" / "mlbridge-pipeline-clang-llvm19"
        assert driver.is_file() and f"exec {driver} " in Path(cc).read_text()
        stats = tmp_path / f"{kind}.jsonl"
        settings = {**env, "MLBRIDGE_PIPELINE_STATS": str(stats)}
        _run([cc, "-c", source, "-o", tmp_path / f"{kind}.o"], base_venv.cwd, 120, settings)
        (record,) = [json.loads(line) for line in stats.read_text().splitlines()]
        assert (record["answered"], record["fallbacks"]) == (1, 0), record
        objects.append((tmp_path / f"{kind}.o").read_bytes())
        _run([cc, tmp_path / f"{kind}.o", "-o", tmp_path / kind / "prog"], base_venv.cwd, 120, env)
        assert _run([tmp_path / kind / "prog"], base_venv.cwd, 30).stdout == "42\n"
    assert objects[0] == objects[1]

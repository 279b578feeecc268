"""mlbridge_add_aot_model (cmake/MlbridgeAot.cmake) in a small project, as
a downstream project uses it: a model whose weights go to a weights file
builds, runs like ONNX Runtime, and is rebuilt when only its weights change;
the SHARED variant exports the model's entry point."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from test_aot import ROOT, onnxruntime_outputs, save  # noqa: E402
from test_aot_scale import dense_model  # noqa: E402

AOT_COMMAND = Path(sys.executable).with_name("mlbridge-aot")

PROJECT = """cmake_minimum_required(VERSION 3.20)
project(aot_cmake_test CXX)
set(MLBRIDGE_AOT_COMMAND "{command}")
include("{root}/cmake/MlbridgeAot.cmake")
mlbridge_add_aot_model(dense_model MODEL ${{CMAKE_SOURCE_DIR}}/dense.onnx CLASS Dense
                       NAMESPACE cmake_test OPTIONS --max-memory 100000000)
add_executable(run_dense main.cpp)
target_link_libraries(run_dense PRIVATE dense_model)
mlbridge_add_aot_model(dense_module MODEL ${{CMAKE_SOURCE_DIR}}/dense.onnx CLASS Dense
                       NAMESPACE cmake_module SHARED)
"""

MAIN = """#include "Dense.h"
#include <cstdio>
int main() {
  static cmake_test::Dense M;
  float *X = static_cast<float *>(M.arg_data(0));
  for (int I = 0; I < 400; ++I)
    X[I] = float(I % 7) / 7.0f - 0.5f;
  if (!M.Run()) {
    std::puts(M.error());
    return 1;
  }
  const float *Y = static_cast<const float *>(M.result_data(0));
  for (int I = 0; I < 3; ++I)
    std::printf("%a\\n", Y[I]);
}
"""


def _inputs() -> List[np.ndarray]:
    return [
        (np.arange(400, dtype=np.float32).reshape(1, 400) % 7) / np.float32(7) - np.float32(0.5)
    ]


def _build_and_run(project: Path, build: Path) -> np.ndarray:
    done = subprocess.run(
        ["cmake", "--build", str(build)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = subprocess.run([str(build / "run_dense")], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return np.array([float.fromhex(line) for line in ran.stdout.split()], np.float32)


@pytest.mark.skipif(
    shutil.which("cmake") is None or not AOT_COMMAND.exists(),
    reason="needs cmake and the mlbridge-aot program",
)
@pytest.mark.slow
def test_weights_file_through_cmake(tmp_path: Path) -> None:
    project, build = tmp_path / "project", tmp_path / "build"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(PROJECT.format(command=AOT_COMMAND, root=ROOT))
    (project / "main.cpp").write_text(MAIN)
    model = dense_model(400, 70, seed=1)
    save(model, project / "dense.onnx")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    done = subprocess.run(
        ["cmake", "-S", str(project), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Debug"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    first = _build_and_run(project, build)
    np.testing.assert_allclose(
        first, onnxruntime_outputs(model, _inputs())[0][0], rtol=1e-4, atol=1e-4
    )
    weights = build / "dense_model_aot" / "Dense.weights.bin"
    assert weights.stat().st_size > 64 << 10

    # Same shapes, other weights: only the weights file and the digest change.
    other = dense_model(400, 70, seed=2)
    save(other, project / "dense.onnx")
    second = _build_and_run(project, build)
    assert not np.array_equal(first, second)
    np.testing.assert_allclose(
        second, onnxruntime_outputs(other, _inputs())[0][0], rtol=1e-4, atol=1e-4
    )

    module = build / "dense_module.so"
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(module)], capture_output=True, text=True
    ).stdout
    assert "mlbridge_aot_model_v1_entry" in symbols

"""mlbridge-aot at scale: weights as a binary file assembled in (not C++
literals), a 20-million-weight layer and a 10,000-node chain that generate
and compile in seconds, and both paths (inline arrays, weights file) equal
to ONNX Runtime."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import List

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from test_aot import (  # noqa: E402
    WARNINGS,
    F,
    _compile_cxx,
    compilers,
    make_model,
    onnxruntime_outputs,
    run_cli,
    run_generated,
    save,
)

from mlbridge.aot import DEFAULT_INLINE_LIMIT, compile_model  # noqa: E402
from mlbridge.aot.runfn import OUTLINE_NODES, STEP_NODES  # noqa: E402
from onnx import helper  # noqa: E402


def dense_model(k: int, n: int, m: int = 1, seed: int = 5) -> onnx.ModelProto:
    """y = Relu(x W + b) z W2 with random weights: x [m, k], W [k, n]."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((k, n), dtype=np.float32) * (1 / np.sqrt(k))).astype(np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    w2 = rng.standard_normal((n, 3), dtype=np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="dense"),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="head"),
    ]
    return make_model(
        nodes, [("x", F, [m, k])], [("y", F, [m, 3]), ("h", F, [m, n])], {"w": w, "b": b, "w2": w2}
    )


def chain_model(length: int) -> onnx.ModelProto:
    """``length`` nodes: x + c0, Relu, + c2, Relu... (each c a constant)."""
    rng = np.random.default_rng(length)
    nodes, inits, prev = [], {}, "x"
    for i in range(length):
        if i % 2 == 0:
            inits[f"c{i}"] = (rng.standard_normal(64) * 0.01).astype(np.float32)
            nodes.append(helper.make_node("Add", [prev, f"c{i}"], [f"t{i}"], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=f"relu{i}"))
        prev = f"t{i}"
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    return make_model(nodes, [("x", F, [1, 64])], [("y", F, [1, 64])], inits)


def random_inputs(model: onnx.ModelProto, seed: int = 1) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(np.float32)
        for vi in model.graph.input
    ]


def assert_like_onnxruntime(
    model: onnx.ModelProto, outputs: List[np.ndarray], inputs: List[np.ndarray], exact: bool = False
) -> None:
    for got, want in zip(outputs, onnxruntime_outputs(model, inputs)):
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# -- the acceptance cases ---------------------------------------------------------


@pytest.mark.slow
def test_twenty_million_weights(tmp_path: Path) -> None:
    """A 5000 -> 4000 dense layer (20M random float32 weights): the source
    stays small, the weights are a file, and the result is ONNX Runtime's."""
    model = dense_model(5000, 4000)
    generated = compile_model(save(model, tmp_path / "big.onnx"), class_name="Big")
    assert len(generated.weights) > 80_000_000
    assert len(generated.source) < 200_000 and len(generated.header) < 20_000
    inputs = random_inputs(model)
    assert_like_onnxruntime(model, run_generated(generated, tmp_path / "gen", inputs), inputs)


@pytest.mark.slow
def test_ten_thousand_node_chain(tmp_path: Path) -> None:
    """10,000 elementwise nodes: many small step functions sharing
    out-of-line kernels; bit-exact against ONNX Runtime."""
    model = chain_model(10_000)
    generated = compile_model(model, class_name="Chain")
    assert "#define MLBRIDGE_AOT_OUTLINE_KERNELS 1" in generated.source
    steps = generated.source.count("MLBRIDGE_AOT_INLINE const char *step")
    assert 10_000 / STEP_NODES < steps < 10_000 / STEP_NODES + 2
    inputs = random_inputs(model)
    outputs = run_generated(generated, tmp_path, inputs)
    assert_like_onnxruntime(model, outputs, inputs, exact=True)


@pytest.mark.parametrize(
    "length", [2 * STEP_NODES + 3, OUTLINE_NODES + 1], ids=["inline-kernels", "shared-kernels"]
)
@pytest.mark.slow
def test_chain_in_several_steps(tmp_path: Path, length: int) -> None:
    model = chain_model(length)
    generated = compile_model(model, class_name="Chain")
    outline = "#define MLBRIDGE_AOT_OUTLINE_KERNELS 1" in generated.source
    assert outline == (length > OUTLINE_NODES)
    inputs = random_inputs(model)
    for compiler in compilers():
        outputs = run_generated(generated, tmp_path / compiler, inputs, compiler)
        assert_like_onnxruntime(model, outputs, inputs, exact=True)


# -- inline arrays and weights files -------------------------------------------------


@pytest.mark.parametrize("compiler", compilers())
@pytest.mark.slow
def test_inline_and_file_weights_agree(tmp_path: Path, compiler: str) -> None:
    model = dense_model(40, 70, m=2)
    inline = compile_model(model, class_name="Dense")
    in_file = compile_model(model, class_name="Dense", inline_weights_limit=0)
    assert inline.weights == b"" and "0x1" in inline.source  # hexadecimal floats
    assert in_file.weights and ".incbin" in in_file.source and "0x1." not in in_file.source
    inputs = random_inputs(model)
    a = run_generated(inline, tmp_path / "inline", inputs, compiler)
    b = run_generated(in_file, tmp_path / "file", inputs, compiler)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert_like_onnxruntime(model, a, inputs)


def test_default_limit_keeps_small_models_inline(tmp_path: Path) -> None:
    small, large = dense_model(40, 70), dense_model(400, 70)
    assert compile_model(small).weights == b""
    assert len(compile_model(large).weights) > DEFAULT_INLINE_LIMIT
    compile_model(small, class_name="Small").write(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Small.cpp", "Small.h"]


def test_weights_file_layout(tmp_path: Path) -> None:
    """Every constant 64-byte aligned (the dense kernels' vector loads), the
    SHA-256 of the constants at the end, and in the source, which names the
    file by its absolute path."""
    generated = compile_model(dense_model(40, 70), class_name="Dense", inline_weights_limit=0)
    data = generated.weights
    assert len(data) % 64 == 32
    assert hashlib.sha256(data[:-32]).digest() == data[-32:]
    for half in (data[-32:-16], data[-16:]):
        assert ", ".join(f"0x{b:02x}" for b in half) in generated.source
    offsets = [
        int(line.rsplit("+ ", 1)[1].rstrip(";"))
        for line in generated.source.splitlines()
        if line.startswith("constexpr const float *kConst")
    ]
    assert offsets and all(o % 16 == 0 for o in offsets)  # floats: 64 bytes
    header, source = generated.write(tmp_path / "gen")
    weights = tmp_path / "gen" / "Dense.weights.bin"
    assert weights.read_bytes() == data
    assert f'.incbin \\"{weights.resolve()}\\"' in source.read_text()


def test_new_weights_change_the_source(tmp_path: Path) -> None:
    """Build systems recompile the source when the weights change (a
    compiler's dependency files do not list .incbin files)."""
    first = compile_model(dense_model(40, 70, seed=1), inline_weights_limit=0)
    second = compile_model(dense_model(40, 70, seed=2), inline_weights_limit=0)
    assert first.source != second.source and len(first.weights) == len(second.weights)


@pytest.mark.slow
def test_a_weights_file_that_does_not_match(tmp_path: Path) -> None:
    """A longer file does not assemble; a shorter or other one makes Run()
    fail, whatever the assembler."""
    generated = compile_model(dense_model(40, 70), class_name="Dense", inline_weights_limit=0)
    _, source = generated.write(tmp_path)
    weights = tmp_path / "Dense.weights.bin"
    flags = WARNINGS + ["-O1", "-c"]
    for compiler in compilers():
        weights.write_bytes(generated.weights + b"x")
        assert ".org" in (_compile_cxx(compiler, source, flags) or "")
        weights.write_bytes(generated.weights[:1000])
        assert _compile_cxx(compiler, source, flags) is None
        main = tmp_path / "main.cpp"
        main.write_text(
            '#include "Dense.h"\n#include <cstdio>\nint main() {\n'
            "  mlbridge_models::Dense M;\n"
            '  std::puts(M.Run() ? "ran" : M.error());\n}\n'
        )
        program = tmp_path / f"main.{compiler}"
        assert _compile_cxx(compiler, main, ["-std=c++17", str(source)], program) is None
        done = subprocess.run([str(program)], capture_output=True, text=True)
        assert "the weights file assembled in is not the one generated" in done.stdout


@pytest.mark.slow
def test_weights_with_link_time_optimisation_and_shared_libraries(tmp_path: Path) -> None:
    """The weights file is found by absolute path, also when the assembler
    runs at link time (LTO), and its symbols work in position-independent
    code."""
    model = dense_model(40, 70)
    generated = compile_model(model, class_name="Dense", inline_weights_limit=0)
    inputs = random_inputs(model)
    compiler = compilers()[0]
    lto = run_generated(generated, tmp_path / "lto", inputs, compiler, ["-O2", "-flto"])
    assert_like_onnxruntime(model, lto, inputs)
    _, source = generated.write(tmp_path / "so")
    library = tmp_path / "so" / "libdense.so"
    assert (
        _compile_cxx(
            compiler,
            source,
            WARNINGS
            + ["-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-DMLBRIDGE_AOT_ENTRY_POINT"],
            library,
        )
        is None
    )
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True
    ).stdout
    assert "mlbridge_aot_model_v1_entry" in symbols and "weights" not in symbols


def test_cli_always_write_weights(tmp_path: Path) -> None:
    path = save(dense_model(4, 3), tmp_path / "tiny.onnx")
    out = tmp_path / "gen"
    done = run_cli(str(path), "-o", str(out), "--always-write-weights", "-v")
    assert done.returncode == 0, done.stderr
    assert (out / "Tiny.weights.bin").read_bytes() == b"" and "weights inline" in done.stdout
    done = run_cli(str(path), "-o", str(out), "--inline-weights-limit", "0")
    assert done.returncode == 0, done.stderr
    assert len((out / "Tiny.weights.bin").read_bytes()) > 32
    assert ".incbin" in (out / "Tiny.cpp").read_text()


def test_long_dimension_lists_go_with_the_constants() -> None:
    """A broadcast MatMul over 300 x 2 batches: its irregular batch offsets
    are constants, not a 600-entry constexpr array."""
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        [("a", F, [300, 1, 2, 2])],
        [("y", F, [300, 2, 2, 2])],
        {"b": np.ones((2, 2, 2), np.float32)},
    )
    generated = compile_model(model)
    assert generated.source.count("dimensions: int64 [600]") == 2
    assert "constexpr kernels::I64 kDims1[] = {0, 0, 4" not in generated.source

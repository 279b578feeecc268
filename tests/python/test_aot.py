"""mlbridge-aot's behaviour: errors naming the node or tensor, shape pinning,
constant folding, Relu fusion, deterministic output, the command line and
warning-free generated C++ (numeric correctness is tested in C++, ctest).

The helpers below (models, compiling and running generated code) serve the
other mlbridge-aot tests too (test_aot_*.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from mlbridge.aot import AotError, Generated, compile_model, default_class_name, supported_ops  # noqa: E402
from mlbridge.aot.cxx import float_literal, string_literal  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
F = TensorProto.FLOAT
I64 = TensorProto.INT64
#: A graph input or output: (name, element type, shape).
Tensor = Tuple[str, int, Sequence[Any]]
#: Generated code must compile without a warning.
WARNINGS = ["-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
CXXFLAGS = WARNINGS + ["-O1", "-c"]
#: How mlbridge_add_aot_model compiles generated code.
BUILD_FLAGS = ["-O3", "-ffp-contract=fast"]


# -- helpers -------------------------------------------------------------------


def make_model(
    nodes: List[onnx.NodeProto],
    inputs: List[Tensor],
    outputs: List[Tensor],
    inits: Optional[Dict[str, np.ndarray]] = None,
    extra_opsets: Sequence[Tuple[str, int]] = (),
) -> onnx.ModelProto:
    """A checked opset-13, IR-8 model, as tools/make_aot_test_models.py builds them."""
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(*t) for t in inputs],
        [helper.make_tensor_value_info(*t) for t in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    opsets = [helper.make_opsetid("", 13)]
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def relu_model(shape: Sequence[Any] = (2, 64), elem_type: int = F) -> onnx.ModelProto:
    """y = Relu(x)."""
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", elem_type, shape)],
        [("y", elem_type, shape)],
    )


def dense_relu_model(layer_is_output: bool) -> onnx.ModelProto:
    """y = Relu(Gemm(x, W, b)); ``h``, the Gemm's output, is also an output
    when ``layer_is_output``."""
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="dense"),
        helper.make_node("Relu", ["h"], ["y"], name="relu"),
    ]
    outputs = [("y", F, [1, 3])] + ([("h", F, [1, 3])] if layer_is_output else [])
    return make_model(
        nodes,
        [("x", F, [1, 4])],
        outputs,
        {"w": np.ones((4, 3), np.float32), "b": np.ones(3, np.float32)},
    )


def compile_error(model: Any, **kwargs: Any) -> str:
    """The message of the AotError compiling ``model`` raises."""
    with pytest.raises(AotError) as info:
        compile_model(model, **kwargs)
    return str(info.value)


def ops_of(generated: Generated) -> List[str]:
    """Op types of the nodes computed at run time, in order."""
    return [node.op for node in generated.graph.nodes]


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def run_cli(*args: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """``python -m mlbridge.aot ARGS``."""
    return subprocess.run(
        [sys.executable, "-m", "mlbridge.aot", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


# -- 1. unsupported operators --------------------------------------------------


@pytest.mark.parametrize(
    "op_type, name, inputs, inits, y_shape",
    [
        ("Sin", "my_sin", ["x"], {}, [1, 1, 2, 2]),
        ("Conv", "my_conv", ["x", "w"], {"w": np.ones((2, 1, 1, 1), np.float32)}, [1, 2, 2, 2]),
    ],
    ids=["Sin", "Conv"],
)
def test_unsupported_operator_names_node_and_op(
    op_type: str, name: str, inputs: List[str], inits: Dict[str, np.ndarray], y_shape: List[int]
) -> None:
    model = make_model(
        [helper.make_node(op_type, inputs, ["y"], name=name)],
        [("x", F, [1, 1, 2, 2])],
        [("y", F, y_shape)],
        inits,
    )
    message = compile_error(model)
    assert f"node '{name}' ({op_type})" in message
    assert f"operator {op_type} is not supported" in message
    assert supported_ops() in message


def test_non_default_domain_is_rejected() -> None:
    model = make_model(
        [helper.make_node("Gelu", ["x"], ["y"], name="ms_gelu", domain="com.microsoft")],
        [("x", F, [1, 4])],
        [("y", F, [1, 4])],
        extra_opsets=[("com.microsoft", 1)],
    )
    message = compile_error(model)
    assert "node 'ms_gelu' (Gelu)" in message
    assert "'com.microsoft'" in message
    assert supported_ops() in message


# -- 2. dynamic shapes ---------------------------------------------------------


def test_dynamic_dimension_must_be_pinned() -> None:
    message = compile_error(relu_model(["batch", 64]))
    assert message.startswith("dynamic shape")
    assert "input 'x'" in message and "dimension 0 'batch'" in message


def test_pinned_shape_compiles() -> None:
    generated = compile_model(relu_model(["batch", 64]), input_shapes={"x": [1, 64]})
    assert generated.graph.args[0].shape == (1, 64)
    assert generated.graph.results[0].shape == (1, 64)


def test_pin_naming_no_input_is_an_error() -> None:
    message = compile_error(relu_model(["batch", 64]), input_shapes={"x": [1, 64], "nope": [1]})
    assert "'nope'" in message and "names no input" in message


@pytest.mark.parametrize(
    "pinned", [[-1, 64], [1, 2, 64], [1, 32]], ids=["negative", "rank", "fixed-dim"]
)
def test_pinned_shape_must_fit_the_declared_one(pinned: List[int]) -> None:
    message = compile_error(relu_model(["batch", 64]), input_shapes={"x": pinned})
    assert "'x'" in message


def test_reshape_to_runtime_shape_is_dynamic() -> None:
    model = make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [("x", F, [2, 3]), ("shape", I64, [2])],
        [("y", F, [3, 2])],
    )
    message = compile_error(model)
    assert message.startswith("dynamic shape")
    assert "node 'reshape' (Reshape)" in message and "'shape'" in message


# -- 3. runtime element types --------------------------------------------------


def test_float64_input_is_rejected() -> None:
    message = compile_error(relu_model([2], TensorProto.DOUBLE))
    assert "input 'x'" in message and "DOUBLE" in message


def test_cast_to_double_is_rejected() -> None:
    model = make_model(
        [helper.make_node("Cast", ["x"], ["y"], name="to_double", to=TensorProto.DOUBLE)],
        [("x", F, [2])],
        [("y", TensorProto.DOUBLE, [2])],
    )
    assert "node 'to_double' (Cast)" in compile_error(model)


# -- 4. constant folding -------------------------------------------------------


def test_shape_arithmetic_is_folded() -> None:
    """Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])), as PyTorch
    exports a flatten."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    model = make_model(
        nodes,
        [("x", F, [2, 3, 4])],
        [("y", F, [2, 12])],
        {
            "zero": np.int64(0),
            "axes": np.array([0], np.int64),
            "minus_one": np.array([-1], np.int64),
        },
    )
    generated = compile_model(model)
    assert ops_of(generated) == ["Reshape"]
    assert generated.graph.results[0].shape == (2, 12)


def test_unsupported_operator_on_constants_is_folded() -> None:
    values = np.array([0.5, 1.0, 2.0], np.float32)
    model = make_model(
        [
            helper.make_node("Sin", ["c"], ["s"], name="sin_of_constant"),
            helper.make_node("Add", ["x", "s"], ["y"]),
        ],
        [("x", F, [3])],
        [("y", F, [3])],
        {"c": values},
    )
    generated = compile_model(model)
    assert ops_of(generated) == ["Add"]
    for x in np.sin(values):
        assert float_literal(x) in generated.source


# -- 5. Relu fusion ------------------------------------------------------------


def test_relu_is_fused_into_dense_layer() -> None:
    generated = compile_model(dense_relu_model(layer_is_output=False))
    assert ops_of(generated) == ["Gemm"]
    assert generated.graph.nodes[0].fused.get("relu")
    assert generated.graph.nodes[0].outputs[0].name == "y"


def test_no_fusion_when_layer_output_is_a_result() -> None:
    generated = compile_model(dense_relu_model(layer_is_output=True))
    assert ops_of(generated) == ["Gemm", "Relu"]
    assert not generated.graph.nodes[0].fused.get("relu")


# -- 6. determinism ------------------------------------------------------------


def test_output_is_deterministic(tmp_path: Path) -> None:
    path = save(dense_relu_model(layer_is_output=True), tmp_path / "dense.onnx")
    first, second = compile_model(path), compile_model(path)
    assert first.header == second.header and first.source == second.source


def test_output_does_not_depend_on_hash_seed(tmp_path: Path) -> None:
    path = save(dense_relu_model(layer_is_output=True), tmp_path / "dense.onnx")
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed{seed}"
        done = run_cli(str(path), "-o", str(out), env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outputs[0] == outputs[1] and sorted(outputs[0]) == ["Dense.cpp", "Dense.h"]


def test_write_rewrites_only_changed_files(tmp_path: Path) -> None:
    generated = compile_model(relu_model(), class_name="Policy")
    header, source = generated.write(tmp_path)
    assert (header, source) == (tmp_path / "Policy.h", tmp_path / "Policy.cpp")
    assert header.read_text() == generated.header
    assert source.read_text() == generated.source
    source.write_text("stale")
    old = 1_000_000_000
    for path in (header, source):
        os.utime(path, ns=(old, old))
    generated.write(tmp_path)
    assert header.stat().st_mtime_ns == old
    assert source.stat().st_mtime_ns != old
    assert source.read_text() == generated.source


# -- 7. names ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("inliner_policy.onnx", "InlinerPolicy"),
        ("models/regalloc-eviction.v2.onnx", "RegallocEvictionV2"),
        ("2fast.onnx", "Model2fast"),
    ],
)
def test_default_class_name(path: str, expected: str) -> None:
    assert default_class_name(path) == expected


@pytest.mark.parametrize(
    "class_name", ["1abc", "class", "a-b", ""], ids=["digit", "keyword", "dash", "empty"]
)
def test_bad_class_name(class_name: str) -> None:
    assert f"class name '{class_name}'" in compile_error(relu_model(), class_name=class_name)


@pytest.mark.parametrize(
    "namespace",
    ["1abc", "class", "a::", "::a", "a b"],
    ids=["digit", "keyword", "trailing-colons", "leading-colons", "space"],
)
def test_bad_namespace(namespace: str) -> None:
    assert f"namespace '{namespace}'" in compile_error(relu_model(), namespace=namespace)


def test_nested_namespace() -> None:
    generated = compile_model(relu_model(), class_name="Policy", namespace="my::models")
    assert "namespace my::models {" in generated.header
    assert "class Policy" in generated.header


# -- 8. command line -----------------------------------------------------------


def test_cli_lists_ops() -> None:
    done = run_cli("--list-ops")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == supported_ops()
    assert "Gemm" in done.stdout


def test_cli_writes_header_and_source(tmp_path: Path) -> None:
    path = save(relu_model(["batch", 64]), tmp_path / "inliner_policy.onnx")
    out = tmp_path / "gen"
    done = run_cli(
        str(path), "-o", str(out), "--namespace", "my::models", "--input-shape", "x=1,64"
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["InlinerPolicy.cpp", "InlinerPolicy.h"]
    assert "namespace my::models {" in (out / "InlinerPolicy.h").read_text()
    assert '#include "InlinerPolicy.h"' in (out / "InlinerPolicy.cpp").read_text()
    done = run_cli(str(path), "-o", str(out), "--class", "Other", "--input-shape", "x=1,64")
    assert done.returncode == 0, done.stderr
    assert (out / "Other.h").is_file() and (out / "Other.cpp").is_file()


def test_cli_reports_unsupported_operator(tmp_path: Path) -> None:
    model = make_model(
        [helper.make_node("Sin", ["x"], ["y"], name="my_sin")], [("x", F, [4])], [("y", F, [4])]
    )
    out = tmp_path / "gen"
    done = run_cli(str(save(model, tmp_path / "sin.onnx")), "-o", str(out))
    assert done.returncode == 1
    assert done.stderr.startswith("mlbridge-aot: error:")
    assert "'my_sin'" in done.stderr and "Sin" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("shape", ["x", "x=1,a", "=1,64"])
def test_cli_rejects_malformed_input_shape(tmp_path: Path, shape: str) -> None:
    path = save(relu_model(), tmp_path / "m.onnx")
    done = run_cli(str(path), "-o", str(tmp_path), "--input-shape", shape)
    assert done.returncode == 2
    assert "--input-shape" in done.stderr and repr(shape) in done.stderr


# -- 9. generated code is warning-free -----------------------------------------


@pytest.fixture(scope="module")
def generated_sources(tmp_path_factory: pytest.TempPathFactory) -> List[Path]:
    """The source of every case of tools/make_aot_test_models.py."""
    spec = importlib.util.spec_from_file_location(
        "make_aot_test_models", ROOT / "tools" / "make_aot_test_models.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path_factory.mktemp("aot_sources")
    return [
        compile_model(case.model, class_name=case.class_name).write(out / case.name)[1]
        for case in module.cases()
    ]


def _compile_cxx(
    compiler: str, source: Path, flags: Sequence[str] = CXXFLAGS, output: Optional[Path] = None
) -> Optional[str]:
    """None if ``source`` compiles cleanly, else the compiler's messages."""
    output = output or source.with_suffix(f".{compiler}.o")
    done = subprocess.run(
        [compiler, *flags, "-I", str(source.parent), str(source), "-o", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return None if done.returncode == 0 else f"{source.name}:\n{done.stderr[:2000]}"


def compilers() -> List[str]:
    """The C++ compilers installed among g++ and clang++-19."""
    return [c for c in ("g++", "clang++-19") if shutil.which(c)]


def _main_source(generated: Generated) -> str:
    """A program running the model once: inputs from stdin, outputs to
    stdout (raw bytes), after checking every name's lookup; exit 1 on a
    failed Run(), 2 on a short input, 3 on a wrong lookup."""
    cls = f"{generated.model.namespace}::{generated.model.class_name}"
    checks = []
    for kind, values in (("Arg", generated.graph.args), ("Result", generated.graph.results)):
        info = "argInfo" if kind == "Arg" else "resultInfo"
        for i, v in enumerate(values):
            name = string_literal(v.name)
            checks.append(
                f"  if (M::Lookup{kind}Index({name}) != {i} || "
                f"std::strcmp(M::{info}({i}).Name, {name}) != 0)\n    return 3;"
            )
    return f"""#include "{generated.model.header_name}"
#include <cstdio>
#include <cstring>
using M = {cls};
int main() {{
{chr(10).join(checks)}
  static M Model;
  for (int I = 0; I < M::NumArgs; ++I)
    if (std::fread(Model.arg_data(I), 1, M::argInfo(I).ByteSize, stdin) !=
        M::argInfo(I).ByteSize)
      return 2;
  if (!Model.Run()) {{
    std::fprintf(stderr, "%s\\n", Model.error());
    return 1;
  }}
  for (int I = 0; I < M::NumResults; ++I)
    std::fwrite(Model.result_data(I), 1, M::resultInfo(I).ByteSize, stdout);
  return 0;
}}
"""


def build_generated(
    generated: Generated,
    out: Path,
    compiler: str = "g++",
    flags: Sequence[str] = BUILD_FLAGS,
) -> Path:
    """Writes ``generated`` into ``out`` and compiles it (warnings are errors)
    with a main that reads one set of inputs from stdin and prints the
    outputs; returns the program."""
    _, source = generated.write(out)
    main = out / "main.cpp"
    main.write_text(_main_source(generated))
    objects = [out / f"model.{compiler}.o", out / f"main.{compiler}.o"]
    for src, obj in zip((source, main), objects):
        failure = _compile_cxx(compiler, src, WARNINGS + list(flags) + ["-c"], obj)
        assert failure is None, failure
    program = out / f"model.{compiler}"
    done = subprocess.run(
        [compiler, *map(str, objects), "-o", str(program)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[:2000]
    return program


def run_program(
    generated: Generated, program: Path, inputs: Sequence[np.ndarray]
) -> List[np.ndarray]:
    """Runs a program of :func:`build_generated` on ``inputs`` and returns
    its outputs. The program must print the outputs and nothing else."""
    data = b"".join(
        np.ascontiguousarray(x, v.dtype).tobytes() for x, v in zip(inputs, generated.graph.args)
    )
    ran = subprocess.run([str(program)], input=data, capture_output=True, timeout=300)
    assert ran.returncode == 0 and ran.stderr == b"", (ran.returncode, ran.stderr[:2000])
    sizes = [v.nbytes for v in generated.graph.results]
    assert len(ran.stdout) == sum(sizes), ran.stdout[:200]
    outputs, offset = [], 0
    for v, size in zip(generated.graph.results, sizes):
        outputs.append(np.frombuffer(ran.stdout[offset : offset + size], v.dtype).reshape(v.shape))
        offset += size
    return outputs


def run_generated(
    generated: Generated,
    out: Path,
    inputs: Sequence[np.ndarray],
    compiler: str = "g++",
    flags: Sequence[str] = BUILD_FLAGS,
) -> List[np.ndarray]:
    """Builds ``generated`` (:func:`build_generated`) and runs it once on
    ``inputs``."""
    return run_program(generated, build_generated(generated, out, compiler, flags), inputs)


def onnxruntime_outputs(model: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
    """What ONNX Runtime computes for ``inputs`` (in the graph's input order)."""
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


@pytest.mark.parametrize("compiler", ["g++", "clang++-19"])
@pytest.mark.slow
def test_generated_code_is_warning_free(compiler: str, generated_sources: List[Path]) -> None:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [
            f
            for f in pool.map(lambda s: _compile_cxx(compiler, s), generated_sources)
            if f is not None
        ]
    assert not failures, "\n".join(failures)


# -- 10. unreadable models -----------------------------------------------------


def test_missing_model_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.onnx"
    message = compile_error(path)
    assert str(path) in message and "cannot read" in message


def test_file_that_is_not_onnx(tmp_path: Path) -> None:
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\xff\xff not an ONNX model")
    message = compile_error(path)
    assert str(path) in message and "not an ONNX model" in message


def test_empty_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    assert str(path) in compile_error(path)


def test_bytes_that_are_not_onnx() -> None:
    assert "not an ONNX model" in compile_error(b"\xff\xff not an ONNX model")


def test_c_abi_block_matches_the_public_header() -> None:
    """Generated headers carry the C ABI block of include/mlbridge/AotAbi.h
    verbatim (so generated code depends on nothing and the C API reads it)."""
    from mlbridge.aot.emit import AOT_ABI_V1

    header = (ROOT / "include" / "mlbridge" / "AotAbi.h").read_text()
    begin = header.index("/* BEGIN MLBRIDGE_AOT_ABI_V1 */")
    end = header.index("/* END MLBRIDGE_AOT_ABI_V1 */") + len("/* END MLBRIDGE_AOT_ABI_V1 */\n")
    assert header[begin:end] == AOT_ABI_V1
    generated = compile_model(relu_model([1, 4]))
    assert AOT_ABI_V1 in generated.header

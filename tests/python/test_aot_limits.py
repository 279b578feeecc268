"""mlbridge-aot's budget: shapes and data a hostile model declares are
checked before anything is allocated for them, and every refusal is an
AotError naming the tensor or node (never a traceback from numpy or onnx)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from test_aot import F, compile_error, make_model, relu_model, run_cli, save  # noqa: E402

from mlbridge.aot import DEFAULT_MAX_MEMORY, compile_model  # noqa: E402
from mlbridge.tensor_spec import MAX_RANK  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def unchecked_model(
    nodes: List[Any], inputs: List[Any], outputs: List[Any], inits: List[Any] = ()
) -> onnx.ModelProto:
    """A model built without onnx's checks (a hostile one need not pass them)."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def relu_of(shape: List[int]) -> onnx.ModelProto:
    """y = Relu(x), x declared with ``shape`` (whatever it is)."""
    return unchecked_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", F, shape)],
        [helper.make_tensor_value_info("y", F, [1])],
    )


def add_initializer(tensor: onnx.TensorProto) -> onnx.ModelProto:
    """y = x + ``tensor``."""
    return unchecked_model(
        [helper.make_node("Add", ["x", tensor.name], ["y"])],
        [helper.make_tensor_value_info("x", F, [1])],
        [helper.make_tensor_value_info("y", F, [1])],
        [tensor],
    )


def raw_tensor(name: str, dims: List[int], data: bytes) -> onnx.TensorProto:
    t = TensorProto(name=name, data_type=F, dims=dims)
    t.raw_data = data
    return t


# -- declared shapes -------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, words",
    [
        ([-5, 4], ["dimension 0 is -5", ">= 0"]),
        ([2, 0], ["dimension 1 is 0", "empty tensors"]),
        ([1 << 40, 0], ["dimension 0 is 1099511627776", "at most 2147483647"]),
        ([1 << 20, 1 << 20], ["4398046511104 bytes", f"budget of {DEFAULT_MAX_MEMORY}"]),
        ([1] * (MAX_RANK + 1), [f"{MAX_RANK + 1} dimensions", f"at most {MAX_RANK}"]),
    ],
    ids=["negative", "zero", "huge-dim", "8TiB", "rank"],
)
def test_input_shape_is_checked(shape: List[int], words: List[str]) -> None:
    message = compile_error(relu_of(shape))
    assert "input 'x'" in message
    for word in words:
        assert word in message


def test_memory_budget_is_an_option(tmp_path: Path) -> None:
    model = relu_model([1024, 1024])  # 4 MiB in, 4 MiB out
    assert compile_model(model).graph.args[0].nbytes == 4 << 20
    assert "more than the memory budget of 1000000 bytes" in compile_error(
        model, max_memory=1_000_000
    )
    message = compile_error(model, max_memory=6 << 20)  # each fits, not both
    assert "8388608 bytes of buffers" in message and f"{6 << 20} bytes" in message
    path = save(model, tmp_path / "m.onnx")
    done = run_cli(str(path), "-o", str(tmp_path / "gen"), "--max-memory", "1000000")
    assert done.returncode == 1 and "--max-memory" in done.stderr
    done = run_cli(str(path), "-o", str(tmp_path / "gen"), "--max-memory", "lots")
    assert done.returncode == 2 and "'lots'" in done.stderr


def test_computed_shapes_are_checked() -> None:
    """A Reshape to rank 40 and a broadcast to 40 GB, both from small inputs."""
    reshape = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="deep")],
        [("x", F, [2])],
        [("y", F, [1])],
        {"s": np.array([2] + [1] * (MAX_RANK + 7), np.int64)},
    )
    assert "node 'deep' (Reshape): output 'y' has 40 dimensions" in compile_error(reshape)
    outer = make_model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="outer")],
        [("a", F, [100000, 1]), ("b", F, [1, 100000])],
        [("y", F, [1])],
    )
    message = compile_error(outer)
    assert "node 'outer' (Add): output 'y'" in message and "40000000000 bytes" in message


def test_unpinned_symbolic_dimension() -> None:
    message = compile_error(relu_model(["batch", "features"]))
    assert message.startswith("dynamic shape") and "'batch'" in message


# -- data ------------------------------------------------------------------------


def test_initializer_declaring_more_than_its_data() -> None:
    huge = compile_error(add_initializer(raw_tensor("w", [100000, 100000], bytes(16))))
    assert "initializer 'w'" in huge and "40000000000 bytes" in huge
    short = compile_error(add_initializer(raw_tensor("w", [1000, 1000], bytes(16))))
    assert "initializer 'w'" in short and "needs 4000000 bytes of data" in short
    assert "holds 16" in short
    typed = TensorProto(name="w", data_type=F, dims=[3, 3])
    typed.float_data.extend([1.0, 2.0])
    assert "needs 9 values of data, the model holds 2" in compile_error(add_initializer(typed))
    negative = compile_error(add_initializer(raw_tensor("w", [-1, 4], bytes(16))))
    assert "initializer 'w': dimension 0 is -1" in negative


def test_external_data_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    t = TensorProto(name="w", data_type=F, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=secret.name)
    model = unchecked_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [helper.make_tensor_value_info("x", F, [4])],
        [helper.make_tensor_value_info("y", F, [4])],
        [t],
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    for source in (model, path):
        message = compile_error(source)
        assert "'w'" in message and "external" in message


def plus_constant(**attrs: Any) -> onnx.ModelProto:
    """y = x + Constant(**attrs) (the Constant node is called 'const')."""
    return unchecked_model(
        [
            helper.make_node("Constant", [], ["c"], name="const", **attrs),
            helper.make_node("Add", ["x", "c"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", F, [1])],
        [helper.make_tensor_value_info("y", F, [1])],
    )


def test_constant_attribute_is_checked_before_folding() -> None:
    message = compile_error(plus_constant(value=raw_tensor("v", [100000, 100000], bytes(4))))
    assert "node 'const' (Constant): attribute 'value'" in message and "bytes" in message
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.ones(1, np.float32), "v"),
        numpy_helper.from_array(np.zeros(1, np.int64), "i"),
        [1 << 20, 1 << 20],
    )
    message = compile_error(plus_constant(sparse_value=sparse))
    assert "node 'const' (Constant): attribute 'sparse_value'" in message
    assert "memory budget" in message


@pytest.mark.parametrize(
    "op, inputs, values",
    [
        ("ConstantOfShape", ["s"], {"s": np.array([100000, 100000], np.int64)}),
        (
            "Expand",
            ["one", "s"],
            {"one": np.ones(1, np.float32), "s": np.array([100000, 100000], np.int64)},
        ),
        ("Tile", ["one", "r"], {"one": np.ones(1, np.float32), "r": np.array([1 << 30], np.int64)}),
    ],
    ids=["ConstantOfShape", "Expand", "Tile"],
)
def test_folding_bomb_is_refused_before_it_allocates(
    op: str, inputs: List[str], values: dict
) -> None:
    model = make_model(
        [
            helper.make_node(op, inputs, ["c"], name="bomb"),
            helper.make_node("Add", ["x", "c"], ["y"]),
        ],
        [("x", F, [1])],
        [("y", F, [1])],
        values,
    )
    message = compile_error(model)
    assert f"node 'bomb' ({op}): output 'c'" in message and "memory budget" in message


def test_loop_on_constants_is_not_run_at_compile_time(tmp_path: Path) -> None:
    """A Loop of 10^12 iterations over constants: not folded (it would run
    for ever), so an unsupported operator."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond"], ["cond_out"]),
            helper.make_node("Identity", ["v"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v", F, [1]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", F, [1]),
        ],
    )
    model = make_model(
        [
            helper.make_node("Loop", ["n", "", "v0"], ["v"], name="forever", body=body),
            helper.make_node("Add", ["x", "v"], ["y"]),
        ],
        [("x", F, [1])],
        [("y", F, [1])],
        {"n": np.array(10**12, np.int64), "v0": np.ones(1, np.float32)},
    )
    done = run_cli(str(save(model, tmp_path / "loop.onnx")), "-o", str(tmp_path / "gen"))
    assert done.returncode == 1
    assert "node 'forever' (Loop): operator Loop is not supported" in done.stderr


def _one_node(
    node: onnx.NodeProto,
    inputs: List[Any],
    output: Any,
    inits: Optional[dict] = None,
    opset: int = 13,
) -> onnx.ModelProto:
    """A checked model of ``node`` alone, in ``opset``."""
    model = unchecked_model(
        [node],
        [helper.make_tensor_value_info(*t) for t in inputs],
        [helper.make_tensor_value_info(*output)],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    model.opset_import[0].version = opset
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize(
    "model, words",
    [
        (
            lambda: _one_node(
                helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="n"),
                [("x", F, [2])],
                ("y", F, [2]),
                {"axes": np.arange(10**6, dtype=np.int64)},
            ),
            "1000000 axes would make 1000001 dimensions",
        ),
        (
            lambda: _one_node(
                helper.make_node("Reshape", ["x", "s"], ["y"], name="n"),
                [("x", F, [2])],
                ("y", F, [2]),
                {"s": np.array([np.nan], np.float32)},
            ),
            "the target shape must be integers, got float32",
        ),
        (
            lambda: _one_node(
                helper.make_node("Clip", ["x"], ["y"], name="n", min=float("nan")),
                [("x", TensorProto.INT64, [2])],
                ("y", TensorProto.INT64, [2]),
                opset=6,
            ),
            "must be float32",
        ),
        (
            lambda: _one_node(
                helper.make_node("Gemm", ["a", "b"], ["y"], name="n", alpha=float("inf")),
                [("a", TensorProto.INT64, [2, 2]), ("b", TensorProto.INT64, [2, 2])],
                ("y", TensorProto.INT64, [2, 2]),
            ),
            "int64 Gemm with alpha inf",
        ),
    ],
    ids=["many-axes", "float-shape", "int-clip-nan", "int-gemm-inf"],
)
def test_hostile_parameters_are_errors(model: Any, words: str) -> None:
    message = compile_error(model())
    assert message.startswith("node 'n' (") and words in message


def test_batch_offsets_of_a_broadcast_matmul() -> None:
    """Regular batch offsets are expressions, irregular ones a table."""
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        [("a", F, [4, 1, 2, 2]), ("b", F, [1, 3, 2, 2])],
        [("y", F, [4, 3, 2, 2])],
    )
    source = compile_model(model).source
    assert "kernels::matmul<float, 2, 2, 2>(A0 + kDims" in source
    assert ", A1 + kDims" in source and "A0 + Batch" not in source
    same = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        [("a", F, [5, 2, 2]), ("b", F, [5, 2, 2])],
        [("y", F, [5, 2, 2])],
    )
    assert "A0 + Batch * 4, A1 + Batch * 4" in compile_model(same).source


def test_bad_budgets_are_errors() -> None:
    assert "memory budget must be > 0" in compile_error(relu_model(), max_memory=0)
    assert "inline weights limit must be >= 0" in compile_error(
        relu_model(), inline_weights_limit=-1
    )

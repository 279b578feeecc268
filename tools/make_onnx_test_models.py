"""Build the small ONNX models (and numpy reference results) the C++ tests use.

    python tools/make_onnx_test_models.py OUT_DIR

Writes, deterministically:
- mlp.onnx: x float [1,64] -> Gemm(64x64) -> Relu -> Gemm(64x1) -> y float [1,1];
  mlp.cases.bin: 200 random inputs (float32, 64 each) followed by the 200
  numpy reference outputs (float32).
- policy.onnx: x float [1,300] -> 256 -> Relu -> 256 -> Relu -> y float [1,16]
  (a policy-sized network, for benchmarks).
- accumulator.onnx, mirror.onnx, halve.onnx: tiny multi-agent RL policies
  (recurrent, discrete, continuous); see agents().
- two_io.onnx: a int64 [1,3], b float [1,3] -> sum = Cast(a)+b float [1,3],
  best = ArgMax(sum, axis 1, keepdims) int64 [1,1].
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import onnx
from onnx import TensorProto, helper, numpy_helper

CASES = 200


def mlp(out: Path) -> None:
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((64, 64)).astype(np.float32) * 0.2
    b1 = rng.standard_normal(64).astype(np.float32) * 0.1
    w2 = rng.standard_normal((64, 1)).astype(np.float32) * 0.2
    b2 = rng.standard_normal(1).astype(np.float32) * 0.1
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Gemm", ["r", "w2", "b2"], ["y"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
        [
            numpy_helper.from_array(w1, "w1"),
            numpy_helper.from_array(b1, "b1"),
            numpy_helper.from_array(w2, "w2"),
            numpy_helper.from_array(b2, "b2"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out / "mlp.onnx")
    xs = rng.standard_normal((CASES, 64)).astype(np.float32)
    ys = (np.maximum(xs.astype(np.float64) @ w1 + b1, 0) @ w2 + b2).astype(np.float32)
    (out / "mlp.cases.bin").write_bytes(xs.tobytes() + ys.tobytes())


def dense_stack(out: Path, name: str, sizes: list, seed: int) -> None:
    """A Gemm/Relu stack x [1,sizes[0]] -> y [1,sizes[-1]] with random weights."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        b = (rng.standard_normal(n_out) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        last = i == len(sizes) - 2
        gemm_out = "y" if last else f"h{i}"
        nodes.append(helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [gemm_out]))
        if not last:
            nodes.append(helper.make_node("Relu", [gemm_out], [f"r{i}"]))
            prev = f"r{i}"
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, sizes[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, sizes[-1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out / f"{name}.onnx")


def two_io(out: Path) -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["a"], ["af"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["af", "b"], ["sum"]),
            helper.make_node("ArgMax", ["sum"], ["best"], axis=1, keepdims=1),
        ],
        "two_io",
        [
            helper.make_tensor_value_info("a", TensorProto.INT64, [1, 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3]),
        ],
        [
            helper.make_tensor_value_info("sum", TensorProto.FLOAT, [1, 3]),
            helper.make_tensor_value_info("best", TensorProto.INT64, [1, 1]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out / "two_io.onnx")


def _save(out: Path, name: str, nodes: list, inputs: list, outputs: list) -> None:
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, f, [1, 2]) for n in inputs],
        [helper.make_tensor_value_info(n, f, [1, 2]) for n in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out / f"{name}.onnx")


def agents(out: Path) -> None:
    """Tiny RL policies for the multi-agent tests (all float [1,2]):
    accumulator (recurrent): h_out = h_in + obs, logits = h_out;
    mirror: logits = -obs; halve (continuous): act = obs * 0.5."""
    _save(
        out,
        "accumulator",
        [
            helper.make_node("Add", ["h_in", "obs"], ["h_out"]),
            helper.make_node("Identity", ["h_out"], ["logits"]),
        ],
        ["obs", "h_in"],
        ["logits", "h_out"],
    )
    _save(out, "mirror", [helper.make_node("Neg", ["obs"], ["logits"])], ["obs"], ["logits"])
    half = numpy_helper.from_array(np.array([0.5], np.float32), "half")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["obs", "half"], ["act"])],
        "halve",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("act", TensorProto.FLOAT, [1, 2])],
        [half],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out / "halve.onnx")


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    mlp(out)
    dense_stack(out, "policy", [300, 256, 256, 16], seed=1)
    two_io(out)
    agents(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

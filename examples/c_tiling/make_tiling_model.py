"""Write the ONNX model of the C tiling example's decision.

    python make_tiling_model.py OUT.onnx

The model computes what ``tiling_policy.decide`` computes, with the same
weights (imported from tiling_policy.py next to this file), so the
AOT-compiled model, ONNX Runtime and the Python policy served over pipes
choose the same tiles::

    x = Concat(log_trips, Cast<float>(elem_size), log_footprint)   # [1, 5]
    scores = Gemm(x, WEIGHTS, BIAS)                                # [1, 4]
    tile_index = ArgMax(scores, axis=1, keepdims=0)                # int64 [1]

The output is deterministic (fixed weights, no random state).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper, numpy_helper


def _policy():
    """tiling_policy.py from this file's directory."""
    path = Path(__file__).resolve().with_name("tiling_policy.py")
    spec = importlib.util.spec_from_file_location("tiling_policy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_model() -> onnx.ModelProto:
    """The decision of tiling_policy.decide as an ONNX model (opset 13)."""
    policy = _policy()
    nodes = [
        helper.make_node("Cast", ["elem_size"], ["elem_size_f"], to=TensorProto.FLOAT),
        helper.make_node("Concat", ["log_trips", "elem_size_f", "log_footprint"], ["x"], axis=1),
        helper.make_node("Gemm", ["x", "weights", "bias"], ["scores"]),
        helper.make_node("ArgMax", ["scores"], ["tile_index"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "tiling_policy",
        [
            helper.make_tensor_value_info("log_trips", TensorProto.FLOAT, [1, 3]),
            helper.make_tensor_value_info("elem_size", TensorProto.INT64, [1, 1]),
            helper.make_tensor_value_info("log_footprint", TensorProto.FLOAT, [1, 1]),
        ],
        [helper.make_tensor_value_info("tile_index", TensorProto.INT64, [1])],
        [
            numpy_helper.from_array(policy.WEIGHTS, "weights"),
            numpy_helper.from_array(policy.BIAS, "bias"),
        ],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13)],
        producer_name="mlbridge c_tiling example",
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main(argv: list) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(build_model().SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

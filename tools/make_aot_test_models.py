"""Build the ONNX models that test mlbridge-aot, one or more per operator.

    python tools/make_aot_test_models.py OUT_DIR

Writes, deterministically, OUT_DIR/<case>.onnx for every case below, plus
- models.cmake: MLBRIDGE_AOT_TEST_CASES (case names), and for each case
  MLBRIDGE_AOT_TEST_<case>_CLASS (the C++ class);
- aot_test_headers.inc: the #include line of every generated header;
- aot_test_models.inc: one AOT_TEST_MODEL(Class, "case.onnx", FloatLo, FloatHi,
  IntLo, IntHi) line per case: the ranges random test inputs are drawn from
  (e.g. divisors stay away from zero, indices in range);
- for the few cases ONNX Runtime has no kernel for (int64 Gemm and Relu), an
  AOT_REFERENCE_MODEL(Class, "case.cases.bin") line instead, and
  case.cases.bin: 1000 random inputs and the outputs of ONNX's reference
  implementation (onnx.reference), case after case, each input then each
  output as raw little-endian bytes.
The C++ test (tests/cpp/AotModelTest.cpp) compiles each model with
mlbridge_add_aot_model and compares it with ONNX Runtime on 1000 inputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I = TensorProto.INT64
RNG = np.random.default_rng(7)


def w(*shape: int, scale: float = 0.3) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def const_i64(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


class Case:
    def __init__(
        self,
        name: str,
        nodes: list,
        inputs: list,
        outputs: list,
        inits: dict,
        opset: int = 13,
        floats=(-1.0, 1.0),
        ints=(0, 9),
        reference: bool = False,
    ) -> None:
        self.name, self.floats, self.ints = name, floats, ints
        self.reference = reference
        graph = helper.make_graph(
            nodes,
            name,
            [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
            [
                helper.make_tensor_value_info(o[0], o[1], o[2] if len(o) > 2 else None)
                for o in outputs
            ],
            [
                v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(v, k)
                for k, v in inits.items()
            ],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        onnx.checker.check_model(model)
        self.model = model

    @property
    def class_name(self) -> str:
        return "Aot" + "".join(p.capitalize() for p in self.name.split("_"))


def node(op: str, ins: list, outs: list, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, ins, outs, **attrs)


def cases() -> list:
    out = []
    # --- Gemm -----------------------------------------------------------
    out.append(
        Case(
            "gemm_small",  # few outputs: transposed dot kernel, M=2
            [node("Gemm", ["x", "w", "b"], ["y"])],
            [("x", F, [2, 16])],
            [("y", F)],
            {"w": w(16, 24), "b": w(24)},
        )
    )
    # What the loadable module built from it says of itself (AotModelTest):
    # mlbridge.* entries are carried, other keys are not, quotes escaped.
    helper.set_model_props(
        out[-1].model,
        {"mlbridge.note": 'a "quoted"\nvalue', "producer.key": "dropped", "mlbridge.empty": ""},
    )
    out.append(
        Case(
            "gemm_wide",  # blocked kernel with padding, alpha/beta folded
            [
                node("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=0.5, beta=2.0),
                node("Relu", ["y"], ["r"]),
            ],
            [("x", F, [1, 40])],
            [("y", F), ("r", F)],
            {"w": w(100, 40), "b": w(100)},
        )
    )
    out.append(
        Case(
            "gemm_fused_relu",  # Relu fused into the layer (y not an output)
            [
                node("Gemm", ["x", "w", "b"], ["h"]),
                node("Relu", ["h"], ["r"]),
                node("Gemm", ["r", "w2"], ["y"]),
            ],
            [("x", F, [3, 64])],
            [("y", F)],
            {"w": w(64, 70), "b": w(1, 70), "w2": w(70, 33)},
        )
    )
    out.append(
        Case(
            "gemm_c_matrix",  # C with rows: added after the layer
            [node("Gemm", ["x", "w", "c"], ["y"], beta=0.5)],
            [("x", F, [3, 8])],
            [("y", F)],
            {"w": w(8, 5), "c": w(3, 5)},
        )
    )
    out.append(
        Case(
            "gemm_runtime",  # runtime B and C, transposes, alpha
            [node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=1.5, beta=0.25)],
            [("a", F, [4, 3]), ("b", F, [5, 4]), ("c", F, [1, 5])],
            [("y", F)],
            {},
        )
    )
    out.append(
        Case(
            "gemm_int64",
            [node("Gemm", ["a", "b", "c"], ["y"])],
            [("a", I, [2, 3]), ("b", I, [3, 4]), ("c", I, [4])],
            [("y", I)],
            {},
            ints=(-5, 5),
            reference=True,
        )
    )
    # --- MatMul ---------------------------------------------------------
    out.append(
        Case(
            "matmul_const",  # batched rows against constant weights
            [
                node("MatMul", ["x", "w"], ["y"]),
                node("MatMul", ["v", "w"], ["z"]),
                node("MatMul", ["x", "u"], ["s"]),
            ],
            [("x", F, [2, 3, 32]), ("v", F, [32])],
            [("y", F), ("z", F), ("s", F)],
            {"w": w(32, 48), "u": w(32)},
        )
    )
    out.append(
        Case(
            "matmul_runtime",  # broadcast batches, vectors, int64
            [
                node("MatMul", ["a", "b"], ["y"]),
                node("MatMul", ["c", "d"], ["z"]),
                node("MatMul", ["e", "f"], ["s"]),
                node("MatMul", ["a", "g"], ["t"]),
            ],
            [
                ("a", F, [2, 1, 3, 4]),
                ("b", F, [3, 4, 2]),
                ("c", F, [4]),
                ("d", F, [2, 4, 3]),
                ("e", I, [3, 2]),
                ("f", I, [2, 2]),
            ],
            [("y", F), ("z", F), ("s", I), ("t", F)],
            {"g": w(2, 3, 4, 5)},
            ints=(-9, 9),
        )
    )
    # --- Elementwise binary ----------------------------------------------
    binary = []
    for i, op in enumerate(["Add", "Sub", "Mul", "Div"]):
        binary += [
            node(op, ["a", "b"], [f"same_{i}"]),
            node(op, ["a", "row"], [f"row_{i}"]),
            node(op, ["col", "row"], [f"outer_{i}"]),
            node(op, ["a", "k"], [f"scalar_{i}"]),
            node(op, ["k", "a"], [f"rscalar_{i}"]),
        ]
    out.append(
        Case(
            "binary_float",
            binary,
            [("a", F, [2, 3, 4]), ("b", F, [2, 3, 4]), ("row", F, [4]), ("col", F, [3, 1])],
            [(n.output[0], F) for n in binary],
            {"k": np.float32(1.75)},
            floats=(0.5, 3.0),
        )
    )
    ibinary = [node(op, ["a", "b"], [f"i_{op.lower()}"]) for op in ["Add", "Sub", "Mul", "Div"]]
    ibinary.append(node("Div", ["a", "c"], ["i_div_row"]))
    out.append(
        Case(
            "binary_int64",
            ibinary,
            [("a", I, [3, 4]), ("b", I, [3, 4]), ("c", I, [4])],
            [(n.output[0], I) for n in ibinary],
            {},
            ints=(1, 1000),
        )
    )
    # --- Elementwise unary -------------------------------------------------
    unary = [
        node("Relu", ["x"], ["relu"]),
        node("LeakyRelu", ["x"], ["leaky"], alpha=0.2),
        node("Tanh", ["x"], ["tanh"]),
        node("Sigmoid", ["x"], ["sigmoid"]),
        node("Clip", ["x", "lo", "hi"], ["clip"]),
        node("Clip", ["x", "", "hi"], ["clip_hi"]),
        node("Clip", ["x", "rlo"], ["clip_rt"]),
        node("Identity", ["x"], ["ident"]),
        node("Cast", ["x"], ["to_int"], to=I),
        node("Cast", ["n"], ["to_float"], to=F),
        node("Clip", ["n", "nlo", "nhi"], ["clip_int"]),
        node("Abs", ["x"], ["abs"]),
        node("Neg", ["x"], ["neg"]),
        node("Sign", ["x"], ["sign"]),
        node("Exp", ["clip"], ["exp"]),
        node("Log", ["x"], ["log"]),
        node("Sqrt", ["x"], ["sqrt"]),
        node("Abs", ["n"], ["abs_int"]),
        node("Neg", ["n"], ["neg_int"]),
        node("Sign", ["n"], ["sign_int"]),
    ]
    out.append(
        Case(
            "unary",
            unary,
            [("x", F, [4, 5]), ("rlo", F, []), ("n", I, [6])],
            [
                ("relu", F),
                ("leaky", F),
                ("tanh", F),
                ("sigmoid", F),
                ("clip", F),
                ("clip_hi", F),
                ("clip_rt", F),
                ("ident", F),
                ("to_int", I),
                ("to_float", F),
                ("clip_int", I),
                ("abs", F),
                ("neg", F),
                ("sign", F),
                ("exp", F),
                ("log", F),
                ("sqrt", F),
                ("abs_int", I),
                ("neg_int", I),
                ("sign_int", I),
            ],
            {
                "lo": np.float32(-0.5),
                "hi": np.float32(0.25),
                "nlo": np.int64(-3),
                "nhi": np.int64(4),
            },
            opset=14,
            floats=(-6.0, 6.0),
            ints=(-10, 10),
        )
    )
    out.append(
        Case(
            "relu_int64",
            [node("Relu", ["n"], ["y"])],
            [("n", I, [7])],
            [("y", I)],
            {},
            opset=14,
            ints=(-50, 50),
            reference=True,
        )
    )
    out.append(
        Case(
            "clip_opset6",
            [node("Clip", ["x"], ["y"], min=-0.3, max=0.6)],
            [("x", F, [10])],
            [("y", F)],
            {},
            opset=6,
        )
    )
    # --- Softmax ---------------------------------------------------------
    soft = [
        node("Softmax", ["x"], ["last"]),
        node("Softmax", ["x"], ["mid"], axis=1),
        node("LogSoftmax", ["x"], ["loglast"]),
        node("LogSoftmax", ["x"], ["logfirst"], axis=0),
    ]
    out.append(
        Case(
            "softmax",
            soft,
            [("x", F, [2, 3, 5])],
            [(n.output[0], F) for n in soft],
            {},
            floats=(-4.0, 4.0),
        )
    )
    soft11 = [node("Softmax", ["x"], ["coerced"]), node("LogSoftmax", ["x"], ["logcoerced"])]
    out.append(
        Case(
            "softmax_opset11",
            soft11,
            [("x", F, [2, 3, 5])],
            [(n.output[0], F) for n in soft11],
            {},
            opset=11,
            floats=(-4.0, 4.0),
        )
    )
    # --- Layout ------------------------------------------------------------
    layout = [
        node("Reshape", ["x", "shape"], ["reshaped"]),
        node("Flatten", ["x"], ["flat"], axis=2),
        node("Unsqueeze", ["x", "uaxes"], ["unsq"]),
        node("Squeeze", ["unsq", "saxes"], ["sq"]),
        node("Transpose", ["x"], ["tr"], perm=[0, 2, 1]),
        node("Transpose", ["x"], ["tr_rev"]),
        node("Transpose", ["unsq"], ["tr_ones"], perm=[1, 0, 2, 3, 4]),
        node("Concat", ["x", "cx", "x"], ["cat1"], axis=1),
        node("Concat", ["x", "x"], ["catlast"], axis=-1),
        node("Relu", ["reshaped"], ["after_view"]),
    ]
    out.append(
        Case(
            "layout",
            layout,
            [("x", F, [2, 3, 4])],
            [(n.output[0], F) for n in layout],
            {
                "shape": const_i64("shape", [0, -1, 2]),
                "uaxes": const_i64("uaxes", [0, 3]),
                "saxes": const_i64("saxes", [0]),
                "cx": w(2, 2, 4),
            },
        )
    )
    layout11 = [
        node("Unsqueeze", ["x"], ["unsq"], axes=[1]),
        node("Squeeze", ["unsq"], ["sq"], axes=[1]),
        node("Squeeze", ["unsq"], ["sq_all"]),
    ]
    out.append(
        Case(
            "layout_opset11",
            layout11,
            [("x", F, [3, 1, 4])],
            [(n.output[0], F) for n in layout11],
            {},
            opset=11,
        )
    )
    gather = [
        node("Gather", ["table", "ids"], ["embed"]),
        node("Gather", ["x", "cols"], ["picked"], axis=1),
        node("Gather", ["x", "ids"], ["rows"], axis=0),
    ]
    out.append(
        Case(
            "gather",
            gather,
            [("ids", I, [1, 3]), ("x", F, [10, 6])],
            [(n.output[0], F) for n in gather],
            {"table": w(10, 8), "cols": const_i64("cols", [5, -1, 0])},
            ints=(-10, 9),
        )
    )
    # --- Reductions ----------------------------------------------------------
    red = [
        node("ReduceSum", ["x", "ax1"], ["sum1"], keepdims=0),
        node("ReduceSum", ["x"], ["sumall"]),
        node("ReduceSum", ["x", "ax02"], ["sum02"]),
        node("ReduceMean", ["x"], ["mean1"], axes=[-1], keepdims=0),
        node("ReduceMean", ["x"], ["meanall"], keepdims=1),
        node("ArgMax", ["x"], ["am1"], axis=1, keepdims=0),
        node("ArgMax", ["x"], ["am_last"], axis=-1, select_last_index=1),
        node("ReduceSum", ["n", "ax1"], ["isum"], keepdims=0),
        node("ArgMax", ["n"], ["iam"], axis=2),
    ]
    out.append(
        Case(
            "reduce",
            red,
            [("x", F, [2, 3, 4]), ("n", I, [2, 3, 4])],
            [
                ("sum1", F),
                ("sumall", F),
                ("sum02", F),
                ("mean1", F),
                ("meanall", F),
                ("am1", I),
                ("am_last", I),
                ("isum", I),
                ("iam", I),
            ],
            {"ax1": const_i64("ax1", [1]), "ax02": const_i64("ax02", [0, 2])},
            ints=(-3, 3),
        )
    )
    # --- Constant folding: shape arithmetic as PyTorch exports it -----------
    fold = [
        node("Constant", [], ["two"], value=helper.make_tensor("two", I, [1], [2])),
        node("Shape", ["x"], ["shape"]),
        node("Gather", ["shape", "zero"], ["batch"], axis=0),
        node("Unsqueeze", ["batch", "zero_axes"], ["batch1"]),
        node("Concat", ["batch1", "minus_one", "two"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["y3"]),
        node("ReduceSum", ["y3", "last"], ["y"], keepdims=0),
    ]
    out.append(
        Case(
            "const_folding",
            fold,
            [("x", F, [2, 6])],
            [("y", F, [2, 3])],
            {
                "zero": np.int64(0),
                "zero_axes": const_i64("zero_axes", [0]),
                "minus_one": const_i64("minus_one", [-1]),
                "last": const_i64("last", [2]),
            },
        )
    )
    # --- Weights beyond the inline limit: a weights file (.incbin) -----------
    out.append(
        Case(
            "gemm_weights_file",  # 300 KB of weights (last: other cases' RNG draws stay)
            [
                node("Gemm", ["x", "w", "b"], ["h"]),
                node("Relu", ["h"], ["r"]),
                node("Gemm", ["r", "w2"], ["y"]),
            ],
            [("x", F, [2, 300])],
            [("y", F)],
            {"w": w(300, 256, scale=0.06), "b": w(256), "w2": w(256, 10, scale=0.06)},
        )
    )
    return out


def write_reference_cases(case: Case, path: Path, count: int = 1000) -> None:
    """Random inputs and onnx.reference's outputs, case after case."""
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(case.model)
    rng = np.random.default_rng(11)
    chunks = []
    for _ in range(count):
        feeds = {}
        for vi in case.model.graph.input:
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            if vi.type.tensor_type.elem_type == F:
                feeds[vi.name] = rng.uniform(*case.floats, shape).astype(np.float32)
            else:
                feeds[vi.name] = rng.integers(case.ints[0], case.ints[1] + 1, shape, dtype=np.int64)
        outputs = evaluator.run(None, feeds)
        chunks += [feeds[vi.name].tobytes() for vi in case.model.graph.input]
        chunks += [np.asarray(o).tobytes() for o in outputs]
    path.write_bytes(b"".join(chunks))


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    all_cases = cases()
    cmake = ["# Generated by tools/make_aot_test_models.py", "set(MLBRIDGE_AOT_TEST_CASES"]
    cmake += [f"  {c.name}" for c in all_cases] + [")"]
    inc = ["// Generated by tools/make_aot_test_models.py"]
    headers = list(inc)
    for c in all_cases:
        headers.append(f'#include "{c.class_name}.h"')
        onnx.save(c.model, out / f"{c.name}.onnx")
        cmake.append(f"set(MLBRIDGE_AOT_TEST_{c.name}_CLASS {c.class_name})")
        if c.reference:
            write_reference_cases(c, out / f"{c.name}.cases.bin")
            inc.append(f'AOT_REFERENCE_MODEL({c.class_name}, "{c.name}.cases.bin")')
        else:
            inc.append(
                f'AOT_TEST_MODEL({c.class_name}, "{c.name}.onnx", {c.floats[0]}f, '
                f"{c.floats[1]}f, {c.ints[0]}, {c.ints[1]})"
            )
    (out / "models.cmake").write_text("\n".join(cmake) + "\n")
    (out / "aot_test_models.inc").write_text("\n".join(inc) + "\n")
    (out / "aot_test_headers.inc").write_text("\n".join(headers) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

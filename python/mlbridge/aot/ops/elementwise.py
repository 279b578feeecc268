"""Elementwise operators: Add, Sub, Mul, Div with numpy broadcasting; Relu,
LeakyRelu, Tanh, Sigmoid, Abs, Neg, Sign, Exp, Log, Sqrt, Clip, Cast;
Identity (a view)."""

from __future__ import annotations

import numpy as np

from mlbridge.aot.cxx import float_literal, int64_literal
from mlbridge.aot.errors import AotError
from mlbridge.aot.ir import Node
from mlbridge.aot.ops.common import (
    Operator,
    broadcast_shape,
    broadcast_strides,
    collapse,
    require_dtype,
    runtime_input,
    same_dtype,
)

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


def emit_zip(em, a, b, y, functor: str) -> None:
    """Y = functor(A, B) with A and B broadcast to Y's shape."""
    t = em.ctype(a)
    shape, sa, sb = collapse(
        y.shape, broadcast_strides(a.shape, y.shape), broadcast_strides(b.shape, y.shape)
    )
    if len(shape) == 1 and sa[0] in (0, 1) and sb[0] in (0, 1):
        if shape[0] == 1:
            sa, sb = [1], [1]
        if sa[0] == 0 and sb[0] == 0:
            sa = [1]  # both scalars broadcast to n: never, kept for safety
        em.line(
            f"kernels::zip({em.ptr(a)}, {sa[0]}, {em.ptr(b)}, {sb[0]}, "
            f"{em.ptr(y)}, {shape[0]}, {functor});"
        )
    else:
        em.line(
            f"kernels::zipBroadcast<{t}, {t}, {len(shape)}>({em.ptr(a)}, "
            f"{em.i64s(sa)}, {em.ptr(b)}, {em.i64s(sb)}, {em.ptr(y)}, "
            f"{em.i64s(shape)}, {functor});"
        )


class Binary(Operator):
    shared_kernels = True

    def __init__(self, functor: str) -> None:
        self.functor = functor

    def infer(self, node: Node) -> list:
        a, b = runtime_input(node, 0, "A"), runtime_input(node, 1, "B")
        dtype = same_dtype(node, [a, b])
        require_dtype(node, a, [F32, I64])
        return [(dtype, broadcast_shape(node, [a.shape, b.shape]))]

    def emit(self, node: Node, em) -> None:
        a, b = node.inputs[0], node.inputs[1]
        y = node.outputs[0]
        if node.op == "Div" and y.dtype == I64:
            em.line("bool Bad = false;")
            emit_zip(em, a, b, y, "kernels::DivInt{&Bad}")
            em.line("if (Bad)")
            em.line("  " + em.fail(node, "integer division by zero (or overflow)"))
            return
        emit_zip(em, a, b, y, self.functor)


class Unary(Operator):
    shared_kernels = True

    def __init__(self, functor: str, dtypes=(F32,)) -> None:
        self.functor = functor
        self.dtypes = dtypes

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "X")
        require_dtype(node, x, self.dtypes)
        return [(x.dtype, x.shape)]

    def functor_for(self, node: Node, em) -> str:
        return self.functor

    def emit(self, node: Node, em) -> None:
        x, y = node.inputs[0], node.outputs[0]
        em.line(f"kernels::map({em.ptr(x)}, {em.ptr(y)}, {y.size}, {self.functor_for(node, em)});")


class LeakyRelu(Unary):
    def __init__(self) -> None:
        super().__init__("")

    def functor_for(self, node: Node, em) -> str:
        return f"kernels::LeakyRelu{{{float_literal(node.attrs.get('alpha', 0.01))}}}"


class Clip(Unary):
    def __init__(self) -> None:
        super().__init__("", (F32, I64))

    def infer(self, node: Node) -> list:
        if node.opset < 11:  # min and max are float attributes
            require_dtype(node, runtime_input(node, 0, "input"), [F32])
        return super().infer(node)

    def emit(self, node: Node, em) -> None:
        x, y = node.inputs[0], node.outputs[0]
        t = em.ctype(x)
        lit = float_literal if x.dtype == F32 else int64_literal
        bounds = []
        for i, attr, default in (
            (1, "min", "std::numeric_limits<{t}>::lowest()"),
            (2, "max", "std::numeric_limits<{t}>::max()"),
        ):
            v = node.input(i)
            if node.opset < 11:
                value = node.attrs.get(attr)
                bounds.append(lit(value) if value is not None else default.format(t=t))
            elif v is None:
                bounds.append(default.format(t=t))
            elif v.size != 1 or v.dtype != x.dtype:
                raise AotError(
                    f"{node.where()}: {attr} {v.describe()} must be a scalar of the input's type"
                )
            elif v.const is not None:
                bounds.append(lit(v.const.reshape(-1)[0]))
            else:
                bounds.append(f"{em.ptr(v)}[0]")
        em.line(
            f"kernels::map({em.ptr(x)}, {em.ptr(y)}, {y.size}, "
            f"kernels::Clip<{t}>{{{bounds[0]}, {bounds[1]}}});"
        )


class Cast(Operator):
    shared_kernels = True

    TARGETS = {1: F32, 7: I64}

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "input")
        require_dtype(node, x, [F32, I64])
        to = node.attrs.get("to")
        if to not in self.TARGETS:
            raise AotError(
                f"{node.where()}: casting to type {to} is not supported (float32, int64)"
            )
        return [(self.TARGETS[to], x.shape)]

    def emit(self, node: Node, em) -> None:
        x, y = node.inputs[0], node.outputs[0]
        em.line(
            f"kernels::map({em.ptr(x)}, {em.ptr(y)}, {y.size}, kernels::Cast<{em.ctype(y)}>{{}});"
        )


class Identity(Operator):
    view = True

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "input")
        return [(x.dtype, x.shape)]


ELEMENTWISE = {
    "Add": Binary("kernels::Add{}"),
    "Sub": Binary("kernels::Sub{}"),
    "Mul": Binary("kernels::Mul{}"),
    "Div": Binary("kernels::Div{}"),
    "Relu": Unary("kernels::Relu{}", (F32, I64)),
    "LeakyRelu": LeakyRelu(),
    "Tanh": Unary("kernels::Tanh{}"),
    "Abs": Unary("kernels::Abs{}", (F32, I64)),
    "Neg": Unary("kernels::Neg{}", (F32, I64)),
    "Sign": Unary("kernels::Sign{}", (F32, I64)),
    "Exp": Unary("kernels::Exp{}"),
    "Log": Unary("kernels::Log{}"),
    "Sqrt": Unary("kernels::Sqrt{}"),
    "Sigmoid": Unary("kernels::Sigmoid{}"),
    "Clip": Clip(),
    "Cast": Cast(),
    "Identity": Identity(),
}

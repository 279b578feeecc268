"""Softmax and LogSoftmax (opset 13 semantics: one axis; before 13: the
input coerced to 2-D at the axis)."""

from __future__ import annotations

import numpy as np

from mlbridge.aot.ir import Node
from mlbridge.aot.ops.common import Operator, normalize_axis, require_dtype, runtime_input

F32 = np.dtype(np.float32)


class Softmax(Operator):
    def __init__(self, log: bool) -> None:
        self.log = log

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "input")
        require_dtype(node, x, [F32])
        self._split(node, x.shape)
        return [(x.dtype, x.shape)]

    def _split(self, node: Node, shape: tuple) -> tuple:
        rank = len(shape)
        if node.opset < 13:
            axis = normalize_axis(node, node.attrs.get("axis", 1), max(rank, 1))
            return (
                int(np.prod(shape[:axis], dtype=np.int64)),
                int(np.prod(shape[axis:], dtype=np.int64)),
                1,
            )
        axis = normalize_axis(node, node.attrs.get("axis", -1), max(rank, 1))
        return (
            int(np.prod(shape[:axis], dtype=np.int64)),
            shape[axis] if shape else 1,
            int(np.prod(shape[axis + 1 :], dtype=np.int64)),
        )

    def emit(self, node: Node, em) -> None:
        x, y = node.inputs[0], node.outputs[0]
        outer, n, inner = self._split(node, x.shape)
        if x.size == 0:
            return
        em.line(
            f"kernels::softmax<{outer}, {n}, {inner}, "
            f"{'true' if self.log else 'false'}>({em.ptr(x)}, {em.ptr(y)});"
        )


SOFTMAX = {"Softmax": Softmax(False), "LogSoftmax": Softmax(True)}

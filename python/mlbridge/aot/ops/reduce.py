"""ReduceSum, ReduceMean (axes as attribute or constant input, keepdims,
noop_with_empty_axes) and ArgMax."""

from __future__ import annotations

import numpy as np

from mlbridge.aot.ir import Node
from mlbridge.aot.ops.common import (
    Operator,
    const_param,
    int_list,
    normalize_axis,
    require_dtype,
    runtime_input,
    strides_of,
)

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


class Reduce(Operator):
    shared_kernels = True

    def __init__(self, mean: bool, axes_input_since: int) -> None:
        self.mean = mean
        self.axes_input_since = axes_input_since

    def _axes(self, node: Node) -> list:
        x = node.inputs[0]
        rank = len(x.shape)
        if node.opset < self.axes_input_since:
            axes = node.attrs.get("axes")
        else:
            axes = const_param(node, 1, "axes")
            axes = None if axes is None else int_list(node, axes, "axes")
        if not axes:
            if node.attrs.get("noop_with_empty_axes", 0) and node.opset >= self.axes_input_since:
                return []
            return list(range(rank))
        return sorted({normalize_axis(node, int(a), rank, "axes entry") for a in axes})

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "data")
        require_dtype(node, x, [F32, I64])
        axes = self._axes(node)
        keep = node.attrs.get("keepdims", 1)
        out = tuple(1 if d in axes else n for d, n in enumerate(x.shape) if keep or d not in axes)
        return [(x.dtype, out)]

    def emit(self, node: Node, em) -> None:
        x, y = node.inputs[0], node.outputs[0]
        axes = self._axes(node)
        kept_shape = [1 if d in axes else n for d, n in enumerate(x.shape)]
        own = strides_of(kept_shape)
        out_strides = [0 if d in axes else own[d] for d in range(len(x.shape))]
        divisor = int(np.prod([x.shape[d] for d in axes], dtype=np.int64)) if axes else 1
        rank = max(len(x.shape), 1)
        shape = list(x.shape) or [1]
        out_strides = out_strides or [0]
        em.line(
            f"kernels::reduceSum<{em.ctype(x)}, {rank}>({em.ptr(x)}, "
            f"{em.i64s(shape)}, {em.i64s(out_strides)}, {em.ptr(y)}, {y.size}, "
            f"{'true' if self.mean else 'false'}, {max(divisor, 1)});"
        )


class ArgMax(Operator):
    def _split(self, node: Node) -> tuple:
        x = node.inputs[0]
        axis = normalize_axis(node, node.attrs.get("axis", 0), len(x.shape))
        return (
            axis,
            int(np.prod(x.shape[:axis], dtype=np.int64)),
            x.shape[axis],
            int(np.prod(x.shape[axis + 1 :], dtype=np.int64)),
        )

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "data")
        require_dtype(node, x, [F32, I64])
        axis, _, _, _ = self._split(node)
        keep = node.attrs.get("keepdims", 1)
        out = tuple(1 if d == axis else n for d, n in enumerate(x.shape) if keep or d != axis)
        return [(I64, out)]

    def emit(self, node: Node, em) -> None:
        x, y = node.inputs[0], node.outputs[0]
        _, outer, n, inner = self._split(node)
        last = "true" if node.attrs.get("select_last_index", 0) else "false"
        em.line(
            f"kernels::argmax<{em.ctype(x)}, {outer}, {n}, {inner}, {last}>("
            f"{em.ptr(x)}, {em.ptr(y)});"
        )


REDUCE = {
    "ReduceSum": Reduce(mean=False, axes_input_since=13),
    "ReduceMean": Reduce(mean=True, axes_input_since=18),
    "ArgMax": ArgMax(),
}

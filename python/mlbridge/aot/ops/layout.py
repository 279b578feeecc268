"""Operators that move data: Reshape, Flatten, Squeeze and Unsqueeze (views:
no code), Concat, Transpose, Gather."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from mlbridge.aot.budget import MAX_RANK
from mlbridge.aot.errors import AotError
from mlbridge.aot.ir import Node
from mlbridge.aot.ops.common import (
    Operator,
    const_param,
    int_list,
    normalize_axis,
    require_dtype,
    runtime_input,
    same_dtype,
    strides_of,
)

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


def _axes(node: Node, input_index: int, attr_until: int) -> Optional[List[int]]:
    """Axes from the attribute (opset < attr_until) or from a constant input."""
    if node.opset < attr_until:
        axes = node.attrs.get("axes")
        return None if axes is None else list(axes)
    axes = const_param(node, input_index, "axes")
    return None if axes is None else int_list(node, axes, "axes")


class Reshape(Operator):
    view = True

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "data")
        if node.opset < 5:
            target = list(node.attrs.get("shape", []))
        else:
            shape = const_param(node, 1, "target shape")
            if shape is None:
                raise AotError(f"{node.where()}: missing the shape input")
            target = int_list(node, shape, "target shape")
        allowzero = node.attrs.get("allowzero", 0)
        out = []
        for i, d in enumerate(target):
            if d == 0 and not allowzero:
                if i >= len(x.shape):
                    raise AotError(
                        f"{node.where()}: 0 at position {i} copies a "
                        f"dimension {list(x.shape)} does not have"
                    )
                d = x.shape[i]
            out.append(d)
        if out.count(-1) > 1:
            raise AotError(f"{node.where()}: more than one -1 in shape {target}")
        if -1 in out:
            known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
            if known == 0 or x.size % known:
                raise AotError(f"{node.where()}: cannot reshape {list(x.shape)} to {target}")
            out[out.index(-1)] = x.size // known
        if int(np.prod(out, dtype=np.int64)) != x.size or any(d < 0 for d in out):
            raise AotError(f"{node.where()}: cannot reshape {list(x.shape)} to {target}")
        return [(x.dtype, tuple(out))]


class Flatten(Operator):
    view = True

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "input")
        rank = len(x.shape)
        axis = node.attrs.get("axis", 1)
        if not -rank <= axis <= rank:
            raise AotError(f"{node.where()}: axis {axis} is out of range for rank {rank}")
        axis = axis + rank if axis < 0 else axis
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        return [(x.dtype, (outer, int(np.prod(x.shape[axis:], dtype=np.int64))))]


class Squeeze(Operator):
    view = True

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "data")
        axes = _axes(node, 1, 13)
        rank = len(x.shape)
        if axes is None:
            drop = {d for d, n in enumerate(x.shape) if n == 1}
        else:
            drop = {normalize_axis(node, a, rank, "axes entry") for a in axes}
            for d in drop:
                if x.shape[d] != 1:
                    raise AotError(
                        f"{node.where()}: cannot squeeze dimension {d} of size {x.shape[d]}"
                    )
        return [(x.dtype, tuple(n for d, n in enumerate(x.shape) if d not in drop))]


class Unsqueeze(Operator):
    view = True

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "data")
        axes = _axes(node, 1, 13)
        if axes is None:
            raise AotError(f"{node.where()}: missing axes")
        rank = len(x.shape) + len(axes)
        if rank > MAX_RANK:
            raise AotError(
                f"{node.where()}: {len(axes)} axes would make {rank} dimensions; "
                f"at most {MAX_RANK} are supported"
            )
        positions = {normalize_axis(node, a, rank, "axes entry") for a in axes}
        if len(positions) != len(axes):
            raise AotError(f"{node.where()}: repeated axes {axes}")
        out, rest = [], iter(x.shape)
        for d in range(rank):
            out.append(1 if d in positions else next(rest))
        return [(x.dtype, tuple(out))]


class Concat(Operator):
    shared_kernels = True

    def infer(self, node: Node) -> list:
        xs = [v for v in node.inputs if v is not None]
        if not xs:
            raise AotError(f"{node.where()}: no inputs")
        dtype = same_dtype(node, xs)
        rank = len(xs[0].shape)
        if "axis" not in node.attrs:
            raise AotError(f"{node.where()}: missing the axis attribute")
        axis = normalize_axis(node, node.attrs["axis"], rank)
        out = list(xs[0].shape)
        for v in xs[1:]:
            if len(v.shape) != rank or any(
                a != b for d, (a, b) in enumerate(zip(v.shape, xs[0].shape)) if d != axis
            ):
                raise AotError(
                    f"{node.where()}: {v.describe()} does not match "
                    f"{xs[0].describe()} outside axis {axis}"
                )
            out[axis] += v.shape[axis]
        return [(dtype, tuple(out))]

    def emit(self, node: Node, em) -> None:
        y = node.outputs[0]
        axis = normalize_axis(node, node.attrs["axis"], len(y.shape))
        outer = int(np.prod(y.shape[:axis], dtype=np.int64))
        inner = int(np.prod(y.shape[axis + 1 :], dtype=np.int64))
        row = y.shape[axis] * inner
        offset = 0
        for v in node.inputs:
            if v is None or v.size == 0:
                continue
            chunk = v.shape[axis] * inner
            em.line(
                f"kernels::copyRows({em.ptr(v)}, {chunk}, {em.ptr(y)} + {offset}, "
                f"{row}, {outer}, {chunk});"
            )
            offset += chunk


class Transpose(Operator):
    shared_kernels = True

    def _perm(self, node: Node) -> list:
        x = node.inputs[0]
        rank = len(x.shape)
        perm = node.attrs.get("perm")
        perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
        if sorted(perm) != list(range(rank)):
            raise AotError(f"{node.where()}: perm {perm} is not a permutation of {rank} axes")
        return perm

    def infer(self, node: Node) -> list:
        x = runtime_input(node, 0, "data")
        perm = self._perm(node)
        return [(x.dtype, tuple(x.shape[p] for p in perm))]

    def emit(self, node: Node, em) -> None:
        x, y = node.inputs[0], node.outputs[0]
        perm = self._perm(node)
        own = strides_of(x.shape)
        shape = [n for n in y.shape]
        strides = [own[p] for p in perm]
        kept = [(n, s) for n, s in zip(shape, strides) if n != 1] or [(1, 1)]
        if [s for _, s in kept] == sorted((s for _, s in kept), reverse=True):
            # Only size-1 axes move: the bytes are already in order.
            em.line(f"kernels::copyRows({em.ptr(x)}, 0, {em.ptr(y)}, 0, 1, {y.size});")
            return
        em.line(
            f"kernels::gatherStrided<{em.ctype(y)}, {len(kept)}>({em.ptr(x)}, "
            f"{em.i64s([s for _, s in kept])}, {em.ptr(y)}, "
            f"{em.i64s([n for n, _ in kept])});"
        )


class Gather(Operator):
    def infer(self, node: Node) -> list:
        data, idx = runtime_input(node, 0, "data"), runtime_input(node, 1, "indices")
        require_dtype(node, data, [F32, I64])
        if idx.const is None:
            require_dtype(node, idx, [I64])
        elif idx.const.dtype not in (np.int32, np.int64):
            raise AotError(f"{node.where()}: indices {idx.describe()} must be integers")
        if not data.shape:
            raise AotError(f"{node.where()}: data must have rank >= 1")
        axis = normalize_axis(node, node.attrs.get("axis", 0), len(data.shape))
        out = data.shape[:axis] + tuple(idx.shape) + data.shape[axis + 1 :]
        return [(data.dtype, out)]

    def emit(self, node: Node, em) -> None:
        data, idx, y = node.inputs[0], node.inputs[1], node.outputs[0]
        axis = normalize_axis(node, node.attrs.get("axis", 0), len(data.shape))
        n = data.shape[axis]
        outer = int(np.prod(data.shape[:axis], dtype=np.int64))
        inner = int(np.prod(data.shape[axis + 1 :], dtype=np.int64))
        if idx.const is not None:
            bad = [int(i) for i in idx.const.reshape(-1) if not -n <= int(i) < n]
            if bad:
                raise AotError(
                    f"{node.where()}: constant index {bad[0]} is out of "
                    f"range for axis {axis} of size {n}"
                )
            ip = em.const(idx.const.astype(np.int64), f"{node.name} indices")
        else:
            ip = em.ptr(idx)
        em.line(
            f"if (!kernels::gather<{em.ctype(y)}, {outer}, {n}, {inner}, "
            f"{idx.size}>({em.ptr(data)}, {ip}, {em.ptr(y)}))"
        )
        em.line("  " + em.fail(node, f"an index is outside [-{n}, {n})"))


LAYOUT = {
    "Reshape": Reshape(),
    "Flatten": Flatten(),
    "Squeeze": Squeeze(),
    "Unsqueeze": Unsqueeze(),
    "Concat": Concat(),
    "Transpose": Transpose(),
    "Gather": Gather(),
}

"""What every operator implementation shares: the interface, attribute and
constant-parameter access, axis and broadcasting arithmetic."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from mlbridge.aot.errors import AotError
from mlbridge.aot.ir import Node, Value


class Operator:
    """How one ONNX operator is compiled.

    ``infer`` returns the (dtype, shape) of each output; ``emit`` writes the
    C++ statements computing them through an :class:`~mlbridge.aot.emit.Emitter`.
    A *view* operator (Reshape, Flatten...) computes nothing: its output is
    its first input's bytes under another shape.
    """

    view = False
    #: Its code calls only the kernels kernels.h marks MLBRIDGE_AOT_SHARED
    #: (shared out-of-line functions in a model of many nodes, which then
    #: compiles such nodes for one instruction set only).
    shared_kernels = False

    def infer(self, node: Node) -> list:
        raise NotImplementedError

    def emit(self, node: Node, em: Any) -> None:
        raise NotImplementedError

    def scratch_bytes(self, node: Node) -> int:
        """Bytes of temporary storage the emitted code needs (see Emitter.scratch)."""
        return 0


def runtime_input(node: Node, i: int, what: str = "") -> Value:
    """Input ``i``, which must be present."""
    v = node.input(i)
    if v is None:
        raise AotError(f"{node.where()}: missing input {i}{' (' + what + ')' if what else ''}")
    return v


def const_param(node: Node, i: int, what: str) -> Optional[np.ndarray]:
    """The value of optional input ``i``, which must be a constant (it decides
    a shape or an attribute-like parameter); None when absent."""
    v = node.input(i)
    if v is None:
        return None
    if v.const is None:
        raise AotError(
            f"dynamic shape: {node.where()} takes its {what} from the "
            f"runtime tensor '{v.name}'; mlbridge-aot needs it constant"
        )
    return v.const


def int_list(node: Node, values: Any, what: str) -> List[int]:
    """The integers of a constant parameter (axes, a shape), which must have
    an integer type."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise AotError(f"{node.where()}: the {what} must be integers, got {arr.dtype.name}")
    return [int(x) for x in arr.reshape(-1)]


def normalize_axis(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise AotError(f"{node.where()}: {what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def require_dtype(node: Node, v: Value, allowed: Sequence[np.dtype]) -> None:
    if v.dtype not in [np.dtype(d) for d in allowed]:
        names = ", ".join(np.dtype(d).name for d in allowed)
        raise AotError(f"{node.where()}: input {v.describe()} must be {names}")


def same_dtype(node: Node, values: Sequence[Value]) -> np.dtype:
    dtypes = {v.dtype for v in values}
    if len(dtypes) != 1:
        raise AotError(
            f"{node.where()}: inputs have different element types "
            f"({', '.join(v.describe() for v in values)})"
        )
    return values[0].dtype


def broadcast_shape(node: Node, shapes: Sequence[tuple]) -> tuple:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise AotError(
            f"{node.where()}: shapes {[list(s) for s in shapes]} do not broadcast"
        ) from None


def strides_of(shape: Sequence[int]) -> list:
    """Row-major element strides."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= int(d)
    return strides[::-1]


def broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> list:
    """Strides of ``shape`` broadcast to ``out_shape`` (0 where repeated)."""
    pad = len(out_shape) - len(shape)
    full = [1] * pad + list(shape)
    own = strides_of(full)
    return [0 if full[d] == 1 and out_shape[d] != 1 else own[d] for d in range(len(out_shape))]


def collapse(shape: Sequence[int], *strides: Sequence[int]) -> tuple:
    """Merges adjacent dimensions that every operand walks contiguously and
    drops size-1 dimensions; returns (shape, strides...) of rank >= 1."""
    dims = [(int(n), [int(s[d]) for s in strides]) for d, n in enumerate(shape) if n != 1]
    merged: list = []
    for n, st in dims:
        if merged:
            pn, pst = merged[-1]
            if all(p == s * n for p, s in zip(pst, st)):
                merged[-1] = (pn * n, st)
                continue
        merged.append((n, st))
    if not merged:
        merged = [(1, [1] * len(strides))]
    out_shape = [n for n, _ in merged]
    return (out_shape,) + tuple([st[i] for _, st in merged] for i in range(len(strides)))

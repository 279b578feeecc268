"""Gemm and MatMul. With constant weights (every trained policy), the
weights are repacked at compile time for the kernel that streams them:
column blocks of 64 (or 32) outputs when there are many outputs, transposed
rows for a few; alpha and beta are folded in; a following Relu is fused by
the optimiser (node.fused["relu"])."""

from __future__ import annotations

from typing import Optional

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
    strides_of,
)

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


#: Inputs longer than this always take the dense kernel (the sparse one keeps
#: an index list of the input on the stack).
SPARSE_MAX_K = 4096


def emit_dense(
    em,
    x: str,
    m: int,
    k: int,
    w: np.ndarray,
    bias: Optional[np.ndarray],
    relu: bool,
    y: str,
    hint: str,
    sparse_input: bool = False,
) -> None:
    """Y[m,n] = act(X[m,k] @ W[k,n] + bias) with constant W (float32).
    ``sparse_input``: X comes out of a ReLU, so many of its entries are zero."""
    n = w.shape[1]
    relu_arg = "true" if relu else "false"
    if n >= 32:
        nb = 64 if n >= 64 else 32
        blocks = (n + nb - 1) // nb
        padded = np.zeros((k, blocks * nb), np.float32)
        padded[:, :n] = w
        packed = padded.reshape(k, blocks, nb).transpose(1, 0, 2)
        wsym = em.const(np.ascontiguousarray(packed), f"{hint} weights, {nb}-column blocks")
        bsym = "nullptr"
        if bias is not None:
            pb = np.zeros(blocks * nb, np.float32)
            pb[:n] = bias
            bsym = em.const(pb, f"{hint} bias")
        skip = sparse_input and k <= SPARSE_MAX_K and bool(np.isfinite(w).all())
        em.line(
            f"kernels::denseBlocked<{m}, {k}, {n}, {nb}, {relu_arg}, "
            f"{'true' if skip else 'false'}>({x}, {wsym}, {bsym}, {y});"
        )
    else:
        lanes = 32 if k >= 32 else (16 if k >= 16 else 8)
        wsym = em.const(np.ascontiguousarray(w.T), f"{hint} weights, transposed")
        bsym = em.const(bias.astype(np.float32), f"{hint} bias") if bias is not None else "nullptr"
        em.line(f"kernels::denseDot<{m}, {k}, {n}, {lanes}, {relu_arg}>({x}, {wsym}, {bsym}, {y});")


def emit_add_broadcast(
    em, node: Node, y: str, out_shape: tuple, c, c_shape: tuple, scale: float
) -> None:
    """Y += scale * C, with C broadcast to Y's shape (in place)."""
    shape, sy, sc = collapse(
        out_shape, strides_of(out_shape), broadcast_strides(c_shape, out_shape)
    )
    fn = (
        "kernels::Add{}"
        if scale == 1.0
        else f"[](float A, float B) {{ return A + {float_literal(scale)} * B; }}"
    )
    em.line(
        f"kernels::zipBroadcast<float, float, {len(shape)}>({y}, {em.i64s(sy)}, "
        f"{c}, {em.i64s(sc)}, {y}, {em.i64s(shape)}, {fn});"
    )


class Gemm(Operator):
    def infer(self, node: Node) -> list:
        a, b = runtime_input(node, 0, "A"), runtime_input(node, 1, "B")
        dtype = same_dtype(node, [a, b])
        require_dtype(node, a, [F32, I64])
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise AotError(
                f"{node.where()}: A and B must be matrices, got {list(a.shape)} and {list(b.shape)}"
            )
        m, k = a.shape[::-1] if node.attrs.get("transA", 0) else a.shape
        k2, n = b.shape[::-1] if node.attrs.get("transB", 0) else b.shape
        if k != k2:
            raise AotError(f"{node.where()}: inner dimensions differ ({k} vs {k2})")
        c = node.input(2)
        if c is not None:
            broadcast_shape(node, [c.shape, (m, n)])
            if c.dtype != dtype:
                raise AotError(f"{node.where()}: C {c.describe()} has another element type")
        return [(dtype, (m, n))]

    def scratch_bytes(self, node: Node) -> int:
        a, b = node.inputs[0], node.inputs[1]
        total = 0
        if node.attrs.get("transA", 0):
            total += a.nbytes + 64
        if b.const is None and node.attrs.get("transB", 0):
            total += b.nbytes + 64
        return total

    def emit(self, node: Node, em) -> None:
        a, b, c = node.inputs[0], node.inputs[1], node.input(2)
        y = node.outputs[0]
        m, n = y.shape
        k = b.shape[1] if node.attrs.get("transB", 0) else b.shape[0]
        alpha = float(node.attrs.get("alpha", 1.0))
        beta = float(node.attrs.get("beta", 1.0))
        t = em.ctype(y)
        x = em.ptr(a)
        scratch_used = 0
        if node.attrs.get("transA", 0):
            x = f"reinterpret_cast<{t} *>({em.scratch()})"
            em.line(
                f"kernels::gatherStrided<{t}, 2>({em.ptr(a)}, {em.i64s([1, m])}, "
                f"{x}, {em.i64s([m, k])});"
            )
            scratch_used = (a.nbytes + 63) // 64 * 64 + 64
        relu = bool(node.fused.get("relu"))
        if b.const is not None and y.dtype == F32:
            w = b.const.T if node.attrs.get("transB", 0) else b.const
            w = (w.astype(np.float32) * np.float32(alpha)) if alpha != 1.0 else w.astype(np.float32)
            bias = None
            c_after = None
            if c is not None:
                if c.const is not None and (len(c.shape) < 2 or c.shape[0] == 1):
                    bias = np.broadcast_to(
                        c.const.reshape(-1) if c.const.size > 1 else c.const.reshape(()), (n,)
                    ).astype(np.float32) * np.float32(beta)
                elif beta != 0.0:
                    c_after = c
            if c_after is not None and relu:
                raise AotError(f"{node.where()}: internal error: relu fused before a second bias")
            emit_dense(
                em,
                x,
                m,
                k,
                w,
                bias,
                relu,
                em.ptr(y),
                node.name,
                bool(node.fused.get("sparse_input")) and x == em.ptr(a),
            )
            if c_after is not None:
                emit_add_broadcast(
                    em, node, em.ptr(y), y.shape, em.ptr(c_after), c_after.shape, beta
                )
            return
        # Runtime (or int64) weights: plain loops, then alpha, C, activation.
        wptr = em.ptr(b)
        if node.attrs.get("transB", 0):
            wptr = f"reinterpret_cast<{t} *>({em.scratch()} + {scratch_used})"
            em.line(
                f"kernels::gatherStrided<{t}, 2>({em.ptr(b)}, {em.i64s([1, k])}, "
                f"{wptr}, {em.i64s([k, n])});"
            )
        em.line(f"kernels::matmul<{t}, {m}, {k}, {n}>({x}, {wptr}, {em.ptr(y)});")
        yp = em.ptr(y)
        if alpha != 1.0:
            if t != "float" and not (
                np.isfinite(alpha) and abs(alpha) < 2**63 and alpha.is_integer()
            ):
                raise AotError(
                    f"{node.where()}: int64 Gemm with alpha {alpha} (not an int64) is not supported"
                )
            lit = float_literal(alpha) if t == "float" else int64_literal(int(alpha))
            em.line(f"kernels::map({yp}, {yp}, {m * n}, [](auto V) {{ return V * {lit}; }});")
        if c is not None and beta != 0.0:
            if t == "float":
                emit_add_broadcast(em, node, yp, y.shape, em.ptr(c), c.shape, beta)
            else:
                if beta != 1.0:
                    raise AotError(f"{node.where()}: int64 Gemm with beta != 1 is not supported")
                shape, sy, sc = collapse(
                    y.shape, strides_of(y.shape), broadcast_strides(c.shape, y.shape)
                )
                em.line(
                    f"kernels::zipBroadcast<{t}, {t}, {len(shape)}>({yp}, {em.i64s(sy)}, "
                    f"{em.ptr(c)}, {em.i64s(sc)}, {yp}, {em.i64s(shape)}, kernels::Add{{}});"
                )
        if relu:
            em.line(f"kernels::map({yp}, {yp}, {m * n}, kernels::Relu{{}});")


class MatMul(Operator):
    def _dims(self, node: Node) -> tuple:
        a, b = runtime_input(node, 0, "A"), runtime_input(node, 1, "B")
        if not a.shape or not b.shape:
            raise AotError(f"{node.where()}: MatMul operands must have rank >= 1")
        sa = (1,) + a.shape if len(a.shape) == 1 else a.shape
        sb = b.shape + (1,) if len(b.shape) == 1 else b.shape
        if sa[-1] != sb[-2]:
            raise AotError(
                f"{node.where()}: inner dimensions differ ({list(a.shape)} @ {list(b.shape)})"
            )
        batch = broadcast_shape(node, [sa[:-2], sb[:-2]])
        return a, b, sa, sb, batch

    def infer(self, node: Node) -> list:
        a, b, sa, sb, batch = self._dims(node)
        require_dtype(node, a, [F32, I64])
        dtype = same_dtype(node, [a, b])
        out = batch + (sa[-2], sb[-1])
        if len(a.shape) == 1:
            out = out[:-2] + out[-1:]
        if len(b.shape) == 1:
            out = out[:-1]
        return [(dtype, out)]

    def emit(self, node: Node, em) -> None:
        a, b, sa, sb, batch = self._dims(node)
        y = node.outputs[0]
        m, k, n = sa[-2], sa[-1], sb[-1]
        relu = bool(node.fused.get("relu"))
        if b.const is not None and len(sb) == 2 and y.dtype == F32:
            # x[..., k] @ W[k, n]: every row of every batch is one dense row.
            w = b.const.reshape(k, n).astype(np.float32)
            emit_dense(
                em,
                em.ptr(a),
                int(np.prod(sa[:-1])),
                k,
                w,
                None,
                relu,
                em.ptr(y),
                node.name,
                bool(node.fused.get("sparse_input")),
            )
            return
        t = em.ctype(y)
        nbatch = int(np.prod(batch)) if batch else 1
        a_off = self._batch_offsets(sa, batch, m * k)
        b_off = self._batch_offsets(sb, batch, k * n)
        if nbatch == 1:
            em.line(
                f"kernels::matmul<{t}, {m}, {k}, {n}>({em.ptr(a)} + {a_off[0]}, "
                f"{em.ptr(b)} + {b_off[0]}, {em.ptr(y)});"
            )
        else:
            ao, bo = self._offset_expr(em, a_off, m * k), self._offset_expr(em, b_off, k * n)
            em.line(f"for (int Batch = 0; Batch < {nbatch}; ++Batch)")
            em.line(
                f"  kernels::matmul<{t}, {m}, {k}, {n}>({em.ptr(a)} + {ao}, "
                f"{em.ptr(b)} + {bo}, {em.ptr(y)} + Batch * {m * n});"
            )
        if relu:
            em.line(f"kernels::map({em.ptr(y)}, {em.ptr(y)}, {y.size}, kernels::Relu{{}});")

    @staticmethod
    def _batch_offsets(shape: tuple, batch: tuple, matrix: int) -> np.ndarray:
        """Element offset of each batch's matrix in an operand of ``shape``
        broadcast to ``batch`` (row-major over the batch)."""
        if not batch:
            return np.zeros(1, np.int64)
        strides = broadcast_strides(shape[:-2], batch)
        offsets = np.zeros((), np.int64)
        for d, s in zip(batch, strides):
            offsets = np.add.outer(offsets, np.arange(d, dtype=np.int64) * s)
        return offsets.reshape(-1) * matrix

    @staticmethod
    def _offset_expr(em, offsets: np.ndarray, matrix: int) -> str:
        """``Batch``'s offset: an expression when regular, else a table."""
        if not offsets.any():
            return "0"
        if np.array_equal(offsets, np.arange(offsets.size, dtype=np.int64) * matrix):
            return f"Batch * {matrix}"
        return f"{em.i64s(offsets)}[Batch]"


LINEAR = {"Gemm": Gemm(), "MatMul": MatMul()}

"""Turns a static :class:`~mlbridge.aot.graph.Graph` into a C++17 header and
source with no dependency beyond the standard library.

Storage: every model object owns one 64-byte aligned block holding default
buffers for its arguments and results and a scratch arena for intermediate
tensors; intermediates share arena space when their lifetimes do not overlap
(greedy best fit). View operators (Reshape, Flatten, Squeeze, Unsqueeze,
Identity) emit no code. Nodes producing a result write straight into the
result buffer, which the caller may redirect (``set_result_data``), as it may
redirect the arguments (``set_arg_data``): the mlbridge runner binds both to
its own buffers so that evaluation copies nothing.

The run function is cut into steps compiled twice, generic and for AVX2+FMA
(:mod:`mlbridge.aot.runfn`), and the model picks one set once, when
constructed (x86-64 with GCC or Clang; elsewhere the generic one). Constants
are inline arrays or a weights file (:mod:`mlbridge.aot.weights`); the text
of both files is in :mod:`mlbridge.aot.templates`.
"""

from __future__ import annotations

import re
from typing import List, Optional

import numpy as np

from mlbridge.aot import budget, cxx, weights
from mlbridge.aot.graph import CXX_TYPES, AotError, Graph, Node, Value
from mlbridge.aot.render import GeneratedModel, render
from mlbridge.aot.runfn import NodeCode
from mlbridge.aot.templates import AOT_ABI_V1
from mlbridge.aot.weights import ConstantPool

#: Longer int64 arrays (shapes, strides, offsets) go with the constants.
MAX_CONSTEXPR_DIMS = 256


class _Arena:
    """Greedy best-fit allocation of byte ranges with known lifetimes."""

    def __init__(self) -> None:
        self.free: list = []  # (offset, size)
        self.top = 0

    def alloc(self, size: int) -> int:
        size = cxx.aligned_size(size)
        fits = [b for b in self.free if b[1] >= size]
        if fits:
            off, avail = min(fits, key=lambda b: b[1])
            self.free.remove((off, avail))
            if avail > size:
                self.free.append((off + size, avail - size))
            return off
        off, self.top = self.top, self.top + size
        return off

    def release(self, off: int, size: int) -> None:
        size = cxx.aligned_size(size)
        self.free.append((off, size))
        self.free.sort()
        merged: list = []
        for o, s in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        self.free = merged


class Emitter:
    """What operator implementations write C++ through."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes: List[NodeCode] = []  # the run function, node by node
        self.decls: list = []  # namespace-scope constexpr arrays
        self.pool = ConstantPool()
        self._ptr: dict = {}  # id(Value) -> C++ pointer expression
        self._io: dict = {}  # expression of an argument / result -> ("A", i) / ("R", j)
        self._scratch: Optional[str] = None
        self._counter = 0

    # -- used by operators ---------------------------------------------------
    def ptr(self, v: Value) -> str:
        """A C++ expression: pointer to the elements of ``v``."""
        if id(v) not in self._ptr:
            if v.const is None:
                raise AotError(f"internal error: tensor '{v.name}' has no storage")
            self._ptr[id(v)] = self.const(v.const, v.name)
        expr = self._ptr[id(v)]
        return self.io(*self._io[expr]) if expr in self._io else expr

    def ctype(self, v: Value) -> str:
        return CXX_TYPES[v.dtype]

    def const(self, arr: np.ndarray, hint: str) -> str:
        """Embeds ``arr`` (float32 or int64) as a constant; its symbol."""
        return self.pool.add(arr, hint)

    def i64s(self, values) -> str:
        """A constant int64 array (shapes, strides); its symbol. Small ones are
        constexpr (the compiler folds them), long ones go with the constants."""
        values = [int(x) for x in values]
        if len(values) > MAX_CONSTEXPR_DIMS:
            return self.pool.add(np.asarray(values, np.int64), "dimensions")
        self._counter += 1
        sym = f"kDims{self._counter}"
        items = ", ".join(cxx.int64_literal(x) for x in values) or "0"
        self.decls.append(f"constexpr kernels::I64 {sym}[] = {{{items}}};")
        return sym

    def scratch(self) -> str:
        """Pointer to this node's scratch bytes (Operator.scratch_bytes)."""
        if self._scratch is None:
            raise AotError("internal error: node asked for scratch it did not declare")
        return self._scratch

    def line(self, text: str) -> None:
        self.nodes[-1].lines.append("  " + text)

    def fail(self, node: Node, message: str) -> str:
        """A statement making Run() fail with ``message`` about ``node``."""
        return f"return {cxx.string_literal(node.where() + ': ' + message)};"

    # -- driven by generate() ------------------------------------------------
    def begin(self, comment: str) -> None:
        """Starts the code of the next node; ``comment`` is untrusted text."""
        self.nodes.append(NodeCode(cxx.comment(comment)))

    def bind(self, v: Value, expr: str) -> None:
        self._ptr[id(v)] = expr

    def bind_io(self, v: Value, kind: str, index: int) -> None:
        """Binds ``v`` to argument (``"A"``) or result (``"R"``) ``index``."""
        self._io[f"{kind}{index}"] = (kind, index)
        self.bind(v, f"{kind}{index}")

    def io(self, kind: str, index: int) -> str:
        """``A<i>`` / ``R<j>``, recorded as used by the current node."""
        self.nodes[-1].uses.add((kind, index))
        return f"{kind}{index}"

    def peek(self, v: Value) -> Optional[str]:
        """The expression bound to ``v``, if any (records no use)."""
        return self._ptr.get(id(v))


def _plan_and_emit(graph: Graph) -> tuple:
    """Emits the run function node by node; returns (emitter, arena bytes)."""
    from mlbridge.aot.ops import OPERATORS

    em = Emitter(graph)
    root: dict = {}  # id(view Value) -> Value owning the bytes
    for i, v in enumerate(graph.args):
        em.bind_io(v, "A", i)
    result_of: dict = {}
    for j, v in enumerate(graph.results):
        result_of.setdefault(id(v), j)

    def owner(v: Value) -> Value:
        while id(v) in root:
            v = root[id(v)]
        return v

    # Views share their input's bytes; find owners and last uses first.
    producers = {id(o): n for n in graph.nodes for o in n.outputs}
    last_use: dict = {}
    for index, node in enumerate(graph.nodes):
        impl = OPERATORS[node.op]
        if impl.view:
            src = node.inputs[0]
            if src.const is None or id(src) in producers:
                root[id(node.outputs[0])] = src
        for v in node.inputs:
            if v is not None:
                last_use[id(owner(v))] = index
    arena = _Arena()
    offsets: dict = {}
    for index, node in enumerate(graph.nodes):
        impl = OPERATORS[node.op]
        em.begin(node.where())
        for out in node.outputs:
            if impl.view and id(out) in root:
                continue
            if id(out) in result_of and not impl.view:
                em.bind_io(out, "R", result_of[id(out)])
                continue
            if impl.view:  # a view of a constant: the constant itself
                em.bind(out, em.ptr(node.inputs[0]))
                continue
            off = arena.alloc(out.nbytes)
            offsets[id(out)] = (off, out.nbytes)
            em.bind(out, f"reinterpret_cast<{em.ctype(out)} *>(Scratch + {off})")
        extra = impl.scratch_bytes(node)
        extra_off = arena.alloc(extra) if extra else None
        em._scratch = f"(Scratch + {extra_off})" if extra else None
        for out in node.outputs:
            if id(out) in root:
                em.bind(out, em.peek(owner(out)) or em.ptr(owner(out)))
        if not impl.view:
            em.line("{")
            impl.emit(node, em)
            em.line("}")
        em.nodes[-1].per_isa = not impl.view and not impl.shared_kernels
        if extra:
            arena.release(extra_off, extra)
        for v in node.inputs:
            if v is None:
                continue
            o = owner(v)
            if last_use.get(id(o)) == index and id(o) in offsets:
                arena.release(*offsets.pop(id(o)))
        for out in node.outputs:  # outputs nobody reads
            if id(out) in offsets and id(owner(out)) not in last_use:
                arena.release(*offsets.pop(id(out)))
    written = set()
    for j, v in enumerate(graph.results):
        if em.peek(v) == f"R{j}" and j not in written:
            written.add(j)
            continue
        em.begin(f"result {j} '{v.name}' is another tensor's bytes: copy")
        em.nodes[-1].per_isa = False
        em.line(f"kernels::copyRows({em.ptr(v)}, 0, {em.io('R', j)}, 0, 1, {v.size});")
    return em, arena.top


def generate(graph: Graph, class_name: str, namespace: str, header_name: str,
             source_label: str = "", inline_limit: Optional[int] = None,
             max_memory: Optional[int] = None) -> GeneratedModel:
    """Generates the header ``header_name`` and its source for ``graph``.
    Constants of more than ``inline_limit`` bytes in all go to a weights file
    (:mod:`mlbridge.aot.weights`); the model's buffers and constants must fit
    ``max_memory`` bytes (:mod:`mlbridge.aot.budget`)."""
    if not cxx.is_identifier(class_name):
        raise AotError(f"class name '{class_name}' is not a C++ identifier")
    for part in namespace.split("::"):
        if not cxx.is_identifier(part):
            raise AotError(f"namespace '{namespace}' is not a C++ namespace name")
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", header_name):
        raise AotError(f"header name {header_name!r} must be a plain file name "
                       "(letters, digits, '_', '.', '+', '-')")
    em, arena_bytes = _plan_and_emit(graph)
    return render(graph, em, arena_bytes, class_name, namespace, header_name,
                  source_label or graph.name, weights.optional_limit(inline_limit),
                  budget.optional_max_memory(max_memory))


__all__ = ["AOT_ABI_V1", "Emitter", "GeneratedModel", "generate"]

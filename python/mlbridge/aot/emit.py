"""Turns a static :class:`~mlbridge.aot.ir.Graph` into a C++17 header and
source with no dependency beyond the standard library: :func:`generate`.

Three stages, each its own module:

1. planning (:mod:`mlbridge.aot.plan`): names, where every tensor lives
   (arguments, results, the scratch arena shared by intermediates, views),
   the layout of the model object's storage;
2. emission (here): the operators write the C++ statements of every node
   through an :class:`Emitter`, following the plan; constants are collected
   as they are asked for (:mod:`mlbridge.aot.weights`);
3. rendering (:mod:`mlbridge.aot.render`): the template files of
   :mod:`mlbridge.aot.templates` filled with the names, the layout, the tensor
   tables, the constants and the run function, cut into steps compiled twice,
   generic and for AVX2+FMA (:mod:`mlbridge.aot.runfn`); the model picks one
   set once, when constructed (x86-64 with GCC or Clang; elsewhere the generic
   one).

The caller may redirect the argument and result buffers (``set_arg_data``,
``set_result_data``): the mlbridge runner binds both to its own buffers so that
evaluation copies nothing.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

from mlbridge.aot import budget, cxx, weights
from mlbridge.aot.errors import AotError
from mlbridge.aot.ir import CXX_TYPES, Graph, Node, Value
from mlbridge.aot.plan import (
    InArena,
    InResult,
    OfConstant,
    SharedWith,
    StoragePlan,
    plan_layout,
    plan_names,
    plan_storage,
)
from mlbridge.aot.render import GeneratedModel, render
from mlbridge.aot.runfn import NodeCode
from mlbridge.aot.templates import AOT_ABI_V1
from mlbridge.aot.weights import ConstantPool

#: Longer int64 arrays (shapes, strides, offsets) go with the constants.
MAX_CONSTEXPR_DIMS = 256


class Emitter:
    """What operator implementations write C++ through.

    It holds what the emission produces: the code of each node
    (:attr:`nodes`), namespace-scope declarations (:attr:`decls`) and the
    constants (:attr:`pool`).
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes: List[NodeCode] = []  # the run function, node by node
        self.decls: List[str] = []  # namespace-scope constexpr arrays
        self.pool = ConstantPool()
        self._ptr: Dict[int, str] = {}  # id(Value) -> C++ pointer expression
        #: expression of an argument / result -> ("A", i) / ("R", j)
        self._io: Dict[str, Tuple[str, int]] = {}
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
        """The C++ element type of ``v``."""
        return CXX_TYPES[v.dtype]

    def const(self, arr: np.ndarray, hint: str) -> str:
        """Embeds ``arr`` (float32 or int64) as a constant; its symbol."""
        return self.pool.add(arr, hint)

    def i64s(self, values: Iterable[int]) -> str:
        """A constant int64 array (shapes, strides); its symbol. Small ones are
        constexpr (the compiler folds them), long ones go with the constants."""
        ints = [int(x) for x in values]
        if len(ints) > MAX_CONSTEXPR_DIMS:
            return self.pool.add(np.asarray(ints, np.int64), "dimensions")
        self._counter += 1
        sym = f"kDims{self._counter}"
        items = ", ".join(cxx.int64_literal(x) for x in ints) or "0"
        self.decls.append(f"constexpr kernels::I64 {sym}[] = {{{items}}};")
        return sym

    def scratch(self) -> str:
        """Pointer to this node's scratch bytes (Operator.scratch_bytes)."""
        if self._scratch is None:
            raise AotError("internal error: node asked for scratch it did not declare")
        return self._scratch

    def line(self, text: str) -> None:
        """Appends a statement to the current node's code."""
        self.nodes[-1].lines.append("  " + text)

    def fail(self, node: Node, message: str) -> str:
        """A statement making Run() fail with ``message`` about ``node``."""
        return f"return {cxx.string_literal(node.where() + ': ' + message)};"

    # -- driven by emit_run() ------------------------------------------------
    def begin(self, comment: str, scratch: Optional[int] = None) -> None:
        """Starts the code of the next node; ``comment`` is untrusted text,
        ``scratch`` the arena offset of the node's scratch bytes, if any."""
        self.nodes.append(NodeCode(cxx.comment(comment)))
        self._scratch = f"(Scratch + {scratch})" if scratch is not None else None

    def bind(self, v: Value, expr: str) -> None:
        """``expr`` points to the elements of ``v`` from now on."""
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


def emit_run(graph: Graph, storage: StoragePlan) -> Emitter:
    """The code of every node of ``graph``, in order, stored as ``storage`` says,
    then the copies of the results computed elsewhere."""
    em = Emitter(graph)
    for i, v in enumerate(graph.args):
        em.bind_io(v, "A", i)
    for step in storage.nodes:
        node, impl = step.node, step.operator
        em.begin(node.where(), step.scratch)
        for out, place in step.places:
            if isinstance(place, InResult):
                em.bind_io(out, "R", place.index)
            elif isinstance(place, InArena):
                em.bind(out, f"reinterpret_cast<{em.ctype(out)} *>(Scratch + {place.offset})")
            elif isinstance(place, OfConstant):
                em.bind(out, em.ptr(place.value))
            elif isinstance(place, SharedWith):
                em.bind(out, em.peek(place.owner) or em.ptr(place.owner))
        if not impl.view:
            em.line("{")
            impl.emit(node, em)
            em.line("}")
        em.nodes[-1].per_isa = not impl.view and not impl.shared_kernels
    for j in storage.copies:
        v = graph.results[j]
        em.begin(f"result {j} '{v.name}' is another tensor's bytes: copy")
        em.nodes[-1].per_isa = False
        em.line(f"kernels::copyRows({em.ptr(v)}, 0, {em.io('R', j)}, 0, 1, {v.size});")
    return em


def generate(
    graph: Graph,
    class_name: str,
    namespace: str,
    header_name: str,
    source_label: str = "",
    inline_limit: Optional[int] = None,
    max_memory: Optional[int] = None,
) -> GeneratedModel:
    """Generates the header ``header_name`` and its source for ``graph``.
    Constants of more than ``inline_limit`` bytes in all go to a weights file
    (:mod:`mlbridge.aot.weights`); the model's buffers and constants must fit
    ``max_memory`` bytes (:mod:`mlbridge.aot.budget`)."""
    names = plan_names(class_name, namespace, header_name, source_label or graph.name)
    storage = plan_storage(graph)
    em = emit_run(graph, storage)
    layout = plan_layout(graph.args, graph.results, storage.arena_bytes)
    budget.static_memory(
        f"the model '{cxx.comment(graph.name)}'",
        layout.storage,
        em.pool.nbytes,
        budget.optional_max_memory(max_memory),
    )
    return render(
        graph, names, layout, em.pool, em.nodes, em.decls, weights.optional_limit(inline_limit)
    )


__all__ = ["AOT_ABI_V1", "Emitter", "GeneratedModel", "emit_run", "generate"]

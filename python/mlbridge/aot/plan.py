"""What a generated model is made of, decided before any C++ is written.

- :func:`plan_names`: the class, namespace, header, C symbol and include guard
  (checked: identifiers and a plain file name).
- :func:`plan_storage`: where the elements of every tensor the run function
  computes live. Every model object owns one 64-byte aligned block holding
  default buffers for its arguments and results and a scratch arena for
  intermediate tensors; intermediates share arena space when their lifetimes
  do not overlap (greedy best fit, :class:`Arena`). View operators (Reshape,
  Flatten, Squeeze, Unsqueeze, Identity) compute nothing: their output is
  their input's bytes. Nodes producing a result write straight into the
  result buffer; a result whose bytes are another tensor's (an input, a
  constant, a view, a repeated output) is copied at the end.
- :func:`plan_layout`: the offsets of the argument and result buffers and of
  the arena in the model object's block.

Emission (:mod:`mlbridge.aot.emit`) follows the plan; the text is written by
:mod:`mlbridge.aot.render` and :mod:`mlbridge.aot.runfn`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

from mlbridge.aot import cxx
from mlbridge.aot.errors import AotError
from mlbridge.aot.ir import Graph, Node, Value
from mlbridge.aot.ops import OPERATORS, Operator

# -- names -------------------------------------------------------------------


@dataclass(frozen=True)
class Names:
    """The names of one generated model."""

    class_name: str
    namespace: str  #: ``outer::inner`` allowed
    header_name: str  #: a plain file name
    c_symbol: str  #: the C interface function; prefixes the weights' symbols
    guard: str  #: the header's include guard
    source_label: str  #: the model the code comes from, safe in a comment


def plan_names(class_name: str, namespace: str, header_name: str, source_label: str) -> Names:
    """The checked :class:`Names` (AotError names what is not acceptable)."""
    if not cxx.is_identifier(class_name):
        raise AotError(f"class name '{class_name}' is not a C++ identifier")
    for part in namespace.split("::"):
        if not cxx.is_identifier(part):
            raise AotError(f"namespace '{namespace}' is not a C++ namespace name")
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", header_name):
        raise AotError(
            f"header name {header_name!r} must be a plain file name "
            "(letters, digits, '_', '.', '+', '-')"
        )
    return Names(
        class_name,
        namespace,
        header_name,
        c_symbol=cxx.identifier(f"{namespace.replace('::', '_')}_{class_name}_model"),
        guard=cxx.identifier(f"{namespace}_{class_name}_H").upper(),
        source_label=cxx.comment(source_label),
    )


# -- storage -----------------------------------------------------------------


class Arena:
    """Greedy best-fit allocation of byte ranges with known lifetimes."""

    def __init__(self) -> None:
        self.free: List[Tuple[int, int]] = []  # (offset, size)
        self.top = 0

    def alloc(self, size: int) -> int:
        """The offset of ``size`` bytes (aligned), reusing freed space when it fits."""
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
        """Frees what :meth:`alloc` returned for ``size`` bytes at ``off``."""
        size = cxx.aligned_size(size)
        self.free.append((off, size))
        self.free.sort()
        merged: List[Tuple[int, int]] = []
        for o, s in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        self.free = merged


@dataclass(frozen=True)
class InResult:
    """The tensor is written straight into result ``index``'s buffer."""

    index: int


@dataclass(frozen=True)
class InArena:
    """The tensor lives in the scratch arena at byte ``offset``."""

    offset: int


@dataclass(frozen=True)
class OfConstant:
    """A view of a constant: the tensor is ``value``, embedded as a constant."""

    value: Value


@dataclass(frozen=True)
class SharedWith:
    """A view: the tensor is the bytes of ``owner`` (which is not a view)."""

    owner: Value


#: Where the elements of one computed tensor are.
Place = Union[InResult, InArena, OfConstant, SharedWith]


@dataclass
class NodeStorage:
    """The storage of one node: where its outputs go, and its scratch bytes."""

    node: Node
    operator: Operator
    #: Each output and its place, in the order the emitter binds them.
    places: List[Tuple[Value, Place]]
    #: Arena offset of the node's scratch bytes (Operator.scratch_bytes), or None.
    scratch: Optional[int]


@dataclass
class StoragePlan:
    """The storage of the run function."""

    nodes: List[NodeStorage]
    #: The results whose bytes are another tensor's, copied at the end, in order.
    copies: List[int]
    #: Bytes of the scratch arena.
    arena_bytes: int


def plan_storage(graph: Graph) -> StoragePlan:
    """Where each node of ``graph`` writes (see the module documentation)."""
    root: Dict[int, Value] = {}  # id(view Value) -> Value whose bytes it is
    result_of: Dict[int, int] = {}
    for j, v in enumerate(graph.results):
        result_of.setdefault(id(v), j)

    def owner(v: Value) -> Value:
        while id(v) in root:
            v = root[id(v)]
        return v

    # Views share their input's bytes; find owners and last uses first.
    producers = {id(o) for n in graph.nodes for o in n.outputs}
    last_use: Dict[int, int] = {}
    for index, node in enumerate(graph.nodes):
        if OPERATORS[node.op].view:
            src = node.inputs[0]
            if src.const is None or id(src) in producers:
                root[id(node.outputs[0])] = src
        for v in node.inputs:
            if v is not None:
                last_use[id(owner(v))] = index
    arena = Arena()
    offsets: Dict[int, Tuple[int, int]] = {}
    place_of: Dict[int, Place] = {}
    planned = []
    for index, node in enumerate(graph.nodes):
        impl = OPERATORS[node.op]
        places: List[Tuple[Value, Place]] = []
        for out in node.outputs:
            if impl.view and id(out) in root:
                continue  # placed below, once the others are
            if id(out) in result_of and not impl.view:
                places.append((out, InResult(result_of[id(out)])))
            elif impl.view:  # a view of a constant: the constant itself
                places.append((out, OfConstant(node.inputs[0])))
            else:
                off = arena.alloc(out.nbytes)
                offsets[id(out)] = (off, out.nbytes)
                places.append((out, InArena(off)))
        extra = impl.scratch_bytes(node)
        scratch = arena.alloc(extra) if extra else None
        places += [(out, SharedWith(owner(out))) for out in node.outputs if id(out) in root]
        place_of.update((id(v), place) for v, place in places)
        planned.append(NodeStorage(node, impl, places, scratch))
        if scratch is not None:
            arena.release(scratch, extra)
        for v in node.inputs:
            if v is None:
                continue
            o = owner(v)
            if last_use.get(id(o)) == index and id(o) in offsets:
                arena.release(*offsets.pop(id(o)))
        for out in node.outputs:  # outputs nobody reads
            if id(out) in offsets and id(owner(out)) not in last_use:
                arena.release(*offsets.pop(id(out)))

    def written_directly(v: Value, j: int) -> bool:
        place = place_of.get(id(v))
        while isinstance(place, SharedWith):
            place = place_of.get(id(place.owner))
        return place == InResult(j)

    copies = [j for j, v in enumerate(graph.results) if not written_directly(v, j)]
    return StoragePlan(planned, copies, arena.top)


# -- layout ------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The model object's storage block: argument and result buffers, then the arena."""

    arg_offsets: List[int]
    result_offsets: List[int]
    scratch_offset: int
    #: Bytes of the block (at least 1).
    storage: int


def plan_layout(args: Sequence[Value], results: Sequence[Value], arena_bytes: int) -> Layout:
    """Each buffer aligned, in order: arguments, results, the arena."""
    offsets: Dict[str, List[int]] = {"arg": [], "result": []}
    top = 0
    for kind, values in (("arg", args), ("result", results)):
        for v in values:
            offsets[kind].append(top)
            top += cxx.aligned_size(v.nbytes)
    return Layout(offsets["arg"], offsets["result"], top, max(top + arena_bytes, 1))


__all__ = [
    "Arena",
    "InArena",
    "InResult",
    "Layout",
    "Names",
    "NodeStorage",
    "OfConstant",
    "Place",
    "SharedWith",
    "StoragePlan",
    "plan_layout",
    "plan_names",
    "plan_storage",
]

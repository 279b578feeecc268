"""The static graph's data types, shared by the loader, the operators and the
code generator: :class:`Value`, :class:`Node`, :class:`Graph` and the runtime
element types.

A module of its own so that the operators (:mod:`mlbridge.aot.ops`) need not
import the loader (:mod:`mlbridge.aot.graph`) that calls their shape rules: the
dependencies run one way, ``graph -> ops -> ir``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

#: Element types a runtime (non-constant) tensor may have.
RUNTIME_DTYPES: Dict[int, np.dtype] = {1: np.dtype(np.float32), 7: np.dtype(np.int64)}
#: C++ spelling of each runtime element type.
CXX_TYPES: Dict[np.dtype, str] = {np.dtype(np.float32): "float", np.dtype(np.int64): "std::int64_t"}
#: mlbridge TensorSpec (LLVM) spelling of each runtime element type.
SPEC_TYPES: Dict[np.dtype, str] = {np.dtype(np.float32): "float", np.dtype(np.int64): "int64_t"}


@dataclass(eq=False)
class Value:
    """A tensor of the graph: fixed shape, element type, maybe a constant."""

    name: str
    dtype: np.dtype
    shape: tuple
    const: Optional[np.ndarray] = None

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def describe(self) -> str:
        return f"'{self.name}' ({self.dtype.name} {list(self.shape)})"


@dataclass(eq=False)
class Node:
    """One operator application whose result is computed at run time."""

    op: str
    name: str
    inputs: list  # of Optional[Value]
    outputs: list  # of Value
    attrs: dict
    opset: int
    #: Set by optimisations (e.g. a Relu fused into a dense layer).
    fused: dict = field(default_factory=dict)

    def where(self) -> str:
        return f"node '{self.name}' ({self.op})"

    def input(self, i: int) -> Optional[Value]:
        return self.inputs[i] if i < len(self.inputs) else None


@dataclass
class Graph:
    """The runtime part of a model, in execution order."""

    name: str
    args: list  # of Value (graph inputs)
    results: list  # of Value (graph outputs)
    nodes: list  # of Node
    opset: int
    doc: str = ""
    #: The model's metadata entries whose key starts with "mlbridge."
    #: ((key, value) pairs, in the model's order), carried into the module.
    metadata: tuple = ()


__all__ = ["CXX_TYPES", "RUNTIME_DTYPES", "SPEC_TYPES", "Graph", "Node", "Value"]

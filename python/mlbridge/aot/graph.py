"""The static graph mlbridge-aot compiles: ONNX in, typed values with fixed
shapes out, constants folded.

:func:`load_graph` validates an ONNX model, pins every shape (an unknown
dimension is an error unless the caller supplies it), folds every node whose
inputs are all constant (with ONNX's reference implementation, so shape
arithmetic exported by PyTorch disappears), infers the shape of every other
node through its operator's rules, and drops nodes no output needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from mlbridge.errors import MlbridgeError

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover - reported by load_graph
    onnx = None


class AotError(MlbridgeError, ValueError):
    """The model cannot be compiled ahead of time (unsupported operator,
    dynamic shape, unsupported type, invalid model); the message names the
    node or tensor."""


#: Element types a runtime (non-constant) tensor may have.
RUNTIME_DTYPES = {1: np.dtype(np.float32), 7: np.dtype(np.int64)}
#: C++ spelling of each runtime element type.
CXX_TYPES = {np.dtype(np.float32): "float", np.dtype(np.int64): "std::int64_t"}
#: mlbridge TensorSpec (LLVM) spelling of each runtime element type.
SPEC_TYPES = {np.dtype(np.float32): "float", np.dtype(np.int64): "int64_t"}


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


def _require_onnx() -> None:
    if onnx is None:
        raise AotError("mlbridge-aot needs the 'onnx' package "
                       "(pip install 'mlbridge[aot]')")


def _runtime_dtype(elem_type: int, what: str) -> np.dtype:
    if elem_type not in RUNTIME_DTYPES:
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type else "unknown"
        raise AotError(f"{what} has element type {name}; mlbridge-aot supports "
                       "float32 and int64 tensors at run time")
    return RUNTIME_DTYPES[elem_type]


def _input_shape(vi: Any, pinned: Mapping[str, Sequence[int]]) -> tuple:
    tt = vi.type.tensor_type
    declared = list(tt.shape.dim) if tt.HasField("shape") else None
    if vi.name in pinned:
        shape = tuple(int(d) for d in pinned[vi.name])
        if any(d < 0 for d in shape):
            raise AotError(f"input '{vi.name}': --input-shape dimensions must be >= 0, "
                           f"got {list(shape)}")
        if declared is not None:
            if len(declared) != len(shape):
                raise AotError(f"input '{vi.name}': --input-shape the model declares rank "
                               f"{len(declared)}, got {list(shape)}")
            for i, (d, n) in enumerate(zip(declared, shape)):
                if d.HasField("dim_value") and d.dim_value != n:
                    raise AotError(f"input '{vi.name}': --input-shape dimension {i} is fixed "
                                   f"to {d.dim_value} by the model, got {n}")
        return shape
    if declared is None:
        raise AotError(f"dynamic shape: input '{vi.name}' has no declared shape; "
                       f"pin it with --input-shape {vi.name}=D0,D1,...")
    dims = []
    for i, d in enumerate(declared):
        if not d.HasField("dim_value"):
            label = f" '{d.dim_param}'" if d.dim_param else ""
            raise AotError(
                f"dynamic shape: input '{vi.name}' dimension {i}{label} is not "
                f"fixed; pin it with --input-shape {vi.name}=D0,D1,...")
        dims.append(int(d.dim_value))
    return tuple(dims)


def _load_model(model: Any) -> tuple:
    """(ModelProto, description for messages) from a path, bytes or proto."""
    if isinstance(model, onnx.ModelProto):
        return model, "the model"
    if isinstance(model, (bytes, bytearray)):
        what = "the model bytes"
        try:
            proto = onnx.load_from_string(bytes(model))
        except Exception as e:  # protobuf's DecodeError and friends
            raise AotError(f"{what} are not an ONNX model: {e}") from e
    else:
        what = f"'{model}'"
        try:
            proto = onnx.load(str(model))
        except OSError as e:
            raise AotError(f"cannot read model {what}: {e}") from e
        except Exception as e:
            raise AotError(f"{what} is not an ONNX model: {e}") from e
    if proto.ir_version == 0 and not proto.graph.node and not proto.graph.input:
        raise AotError(f"{what} is not an ONNX model (empty or not a ModelProto)")
    return proto, what


def _attributes(node: Any) -> dict:
    attrs = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            continue  # control flow: rejected as an unsupported operator
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode()
        elif a.type == onnx.AttributeProto.TENSOR:
            value = numpy_helper.to_array(value)
        attrs[a.name] = value
    return attrs


def _fold(node: Any, inputs: list, opset: int, where: str) -> list:
    """Evaluates a node whose inputs are all constant."""
    from onnx.reference import ReferenceEvaluator

    feeds = {name: v.const for name, v in zip(node.input, inputs) if name}
    try:
        results = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception as e:  # the reference implementation raises anything
        raise AotError(f"{where}: cannot fold this constant node: {e}") from e
    return [np.asarray(r) for r in results]


def load_graph(model: Any,
               input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Graph:
    """Builds the static :class:`Graph` of ``model`` (a ModelProto, a path or
    bytes). ``input_shapes`` pins the shapes of inputs with dynamic
    dimensions (e.g. ``{"x": [1, 64]}``)."""
    from mlbridge.aot.ops import OPERATORS, supported_ops

    _require_onnx()
    model, what = _load_model(model)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise AotError(f"{what} is not a valid ONNX model: "
                       f"{str(e).splitlines()[0]}") from e
    pinned = dict(input_shapes or {})
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                 None)
    if opset is None:
        raise AotError("the model imports no default-domain (ai.onnx) opset")
    g = model.graph
    values: dict = {}
    for init in g.initializer:
        arr = numpy_helper.to_array(init)
        values[init.name] = Value(init.name, arr.dtype, arr.shape, arr)
    args = []
    for vi in g.input:
        if vi.name in values:
            continue  # an initializer listed as input (old IR): a constant
        if not vi.type.HasField("tensor_type"):
            raise AotError(f"input '{vi.name}' is not a tensor")
        dtype = _runtime_dtype(vi.type.tensor_type.elem_type, f"input '{vi.name}'")
        shape = _input_shape(vi, pinned)
        pinned.pop(vi.name, None)
        v = Value(vi.name, dtype, shape)
        values[vi.name] = v
        args.append(v)
    if pinned:
        raise AotError(f"--input-shape names no input of the model: {sorted(pinned)}")

    nodes = []
    for index, proto in enumerate(g.node):
        name = proto.name or f"{proto.op_type}_{index}"
        where = f"node '{name}' ({proto.op_type})"
        if proto.domain not in ("", "ai.onnx"):
            raise AotError(f"{where}: operator domain '{proto.domain}' is not "
                           f"supported; mlbridge-aot supports: {supported_ops()}")
        inputs = []
        for i in proto.input:
            if not i:
                inputs.append(None)
            elif i not in values:
                raise AotError(f"{where}: input '{i}' is not produced by any node")
            else:
                inputs.append(values[i])
        present = [v for v in inputs if v is not None]
        if proto.op_type == "Shape" and present:
            folded = [np.asarray(present[0].shape, dtype=np.int64)]
            attrs = _attributes(proto)
            folded = [folded[0][attrs.get("start", 0):attrs.get("end", None)]]
        elif all(v.const is not None for v in present) and proto.op_type not in (
                "RandomNormal", "RandomUniform", "RandomNormalLike",
                "RandomUniformLike", "Multinomial", "Bernoulli"):
            folded = _fold(proto, inputs, opset, where)
        else:
            folded = None
        if folded is not None:
            for out, arr in zip(proto.output, folded):
                values[out] = Value(out, arr.dtype, arr.shape, arr)
            continue
        impl = OPERATORS.get(proto.op_type)
        if impl is None:
            raise AotError(f"{where}: operator {proto.op_type} is not supported; "
                           f"mlbridge-aot supports: {supported_ops()}")
        node = Node(proto.op_type, name, inputs, [], _attributes(proto), opset)
        shapes = impl.infer(node)
        if len(shapes) < len([o for o in proto.output if o]):
            raise AotError(f"{where}: produces {len(proto.output)} outputs; "
                           f"mlbridge-aot computes only {len(shapes)}")
        for out, (dtype, shape) in zip(proto.output, shapes):
            dtype = np.dtype(dtype)
            if dtype not in CXX_TYPES:
                raise AotError(f"{where}: output '{out}' would have element type "
                               f"{dtype.name}; only float32 and int64 are supported")
            v = Value(out, dtype, tuple(int(d) for d in shape))
            node.outputs.append(v)
            if out:
                values[out] = v
        nodes.append(node)

    results = []
    for vi in g.output:
        if vi.name not in values:
            raise AotError(f"output '{vi.name}' is not produced by any node")
        v = values[vi.name]
        if v.dtype not in CXX_TYPES:
            raise AotError(f"output {v.describe()}: only float32 and int64 "
                           "outputs are supported")
        results.append(v)
    names = [v.name for v in args] + [v.name for v in results]
    if len(set(names)) != len(names):
        raise AotError("an input and an output (or two outputs) share a name; "
                       "rename them in the model")
    return Graph(g.name or "model", args, results, _live_nodes(nodes, results), opset,
                 g.doc_string)


def _live_nodes(nodes: list, results: list) -> list:
    """The nodes some result depends on, in their original order."""
    needed = {id(v) for v in results}
    live = []
    for node in reversed(nodes):
        if any(id(o) in needed for o in node.outputs):
            live.append(node)
            needed.update(id(v) for v in node.inputs if v is not None)
    return live[::-1]

"""The static graph mlbridge-aot compiles: ONNX in, typed values with fixed
shapes out, constants folded.

:func:`load_graph` validates an ONNX model, pins every shape (an unknown
dimension is an error unless the caller supplies it), folds every node whose
inputs are all constant (with ONNX's reference implementation, so shape
arithmetic exported by PyTorch disappears), infers the shape of every other
node through its operator's rules, and drops nodes no output needs. Every
shape and every tensor's data is checked against the memory budget
(:mod:`mlbridge.aot.budget`) before anything is allocated for it.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

import numpy as np

from mlbridge.aot import budget
from mlbridge.aot.errors import AotError

# The data types live in mlbridge.aot.ir; importable from here as before.
from mlbridge.aot.ir import CXX_TYPES, RUNTIME_DTYPES, SPEC_TYPES, Graph, Node, Value
from mlbridge.aot.ops import OPERATORS, supported_ops
from mlbridge.input_files import read_regular_file
from mlbridge.limits import MAX_ONNX_MODEL_BYTES

#: Whether the optional 'onnx' package is installed; ``onnx`` and ``helper``
#: are bound only if it is (load_graph checks first, see _require_onnx).
HAVE_ONNX: bool
try:
    import onnx
    from onnx import helper

    HAVE_ONNX = True
except ImportError:  # pragma: no cover - reported by load_graph
    HAVE_ONNX = False


def _require_onnx() -> None:
    if not HAVE_ONNX:
        raise AotError(
            "mlbridge-aot needs the 'onnx' package (pip install 'mlbridge-compiler[aot]')"
        )


def _runtime_dtype(elem_type: int, what: str) -> np.dtype:
    if elem_type not in RUNTIME_DTYPES:
        name = (
            onnx.TensorProto.DataType.Name(elem_type)
            if elem_type in onnx.TensorProto.DataType.values()
            else f"unknown ({elem_type})"
        )
        raise AotError(
            f"{what} has element type {name}; mlbridge-aot supports "
            "float32 and int64 tensors at run time"
        )
    return RUNTIME_DTYPES[elem_type]


def _input_shape(vi: Any, pinned: Mapping[str, Sequence[int]]) -> tuple:
    tt = vi.type.tensor_type
    declared = list(tt.shape.dim) if tt.HasField("shape") else None
    if vi.name in pinned:
        shape = tuple(int(d) for d in pinned[vi.name])
        if any(d < 0 for d in shape):
            raise AotError(
                f"input '{vi.name}': --input-shape dimensions must be >= 0, got {list(shape)}"
            )
        if declared is not None:
            if len(declared) != len(shape):
                raise AotError(
                    f"input '{vi.name}': --input-shape the model declares rank "
                    f"{len(declared)}, got {list(shape)}"
                )
            for i, (d, n) in enumerate(zip(declared, shape)):
                if d.HasField("dim_value") and d.dim_value != n:
                    raise AotError(
                        f"input '{vi.name}': --input-shape dimension {i} is fixed "
                        f"to {d.dim_value} by the model, got {n}"
                    )
        return shape
    if declared is None:
        raise AotError(
            f"dynamic shape: input '{vi.name}' has no declared shape; "
            f"pin it with --input-shape {vi.name}=D0,D1,..."
        )
    dims = []
    for i, d in enumerate(declared):
        if not d.HasField("dim_value"):
            label = f" '{d.dim_param}'" if d.dim_param else ""
            raise AotError(
                f"dynamic shape: input '{vi.name}' dimension {i}{label} is not "
                f"fixed; pin it with --input-shape {vi.name}=D0,D1,..."
            )
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
        # Read once, a regular file (a FIFO would block the compiler), within
        # protobuf's limit; external data is refused
        # (budget.refuse_external_data), never read.
        data = read_regular_file(model, MAX_ONNX_MODEL_BYTES, AotError)
        try:
            proto = onnx.load_from_string(data)
        except Exception as e:
            raise AotError(f"{what} is not an ONNX model: {e}") from e
    if proto.ir_version == 0 and not proto.graph.node and not proto.graph.input:
        raise AotError(f"{what} is not an ONNX model (empty or not a ModelProto)")
    return proto, what


def _attributes(node: Any, where: str, max_memory: int) -> dict:
    attrs = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            continue  # control flow: rejected as an unsupported operator
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        elif a.type == onnx.AttributeProto.TENSOR:
            value = budget.tensor_array(value, f"{where}: attribute '{a.name}'", max_memory)
        attrs[a.name] = value
    return attrs


#: Operators never folded: their result is random.
_RANDOM_OPS = (
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
)


def _foldable(node: Any, present: list) -> bool:
    """All inputs constant, a deterministic operator and no subgraph (a Loop
    on constants could run forever at compile time)."""
    return (
        all(v.const is not None for v in present)
        and node.op_type not in _RANDOM_OPS
        and not any(
            a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            for a in node.attribute
        )
    )


def _fold(node: Any, inputs: list, opset: int, where: str, max_memory: int) -> list:
    """Evaluates a node whose inputs are all constant."""
    from onnx.reference import ReferenceEvaluator

    budget.check_folded_outputs(node, inputs, opset, where, max_memory)
    feeds = {name: v.const for name, v in zip(node.input, inputs) if name}
    try:
        results = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception as e:  # the reference implementation raises anything
        raise AotError(f"{where}: cannot fold this constant node: {e}") from e
    return [np.asarray(r) for r in results]


def _check_io_name(name: str, what: str) -> None:
    if "\0" in name:
        raise AotError(
            f"{what} {name!r}: the names of inputs and outputs must not "
            "contain NUL characters (the C interface spells them as C strings)"
        )


def _graph_inputs(g: Any, values: dict, pinned: dict, max_memory: int) -> list:
    """The runtime inputs (initializers listed as inputs are constants)."""
    args = []
    for vi in g.input:
        if vi.name in values:
            continue  # an initializer listed as input (old IR): a constant
        _check_io_name(vi.name, "input")
        if not vi.type.HasField("tensor_type"):
            raise AotError(f"input '{vi.name}' is not a tensor")
        dtype = _runtime_dtype(vi.type.tensor_type.elem_type, f"input '{vi.name}'")
        shape = budget.check_shape(
            f"input '{vi.name}'", _input_shape(vi, pinned), dtype.itemsize, max_memory, runtime=True
        )
        pinned.pop(vi.name, None)
        v = Value(vi.name, dtype, shape)
        values[vi.name] = v
        args.append(v)
    if pinned:
        raise AotError(f"--input-shape names no input of the model: {sorted(pinned)}")
    return args


def _node(proto: Any, index: int, values: dict, opset: int, max_memory: int) -> Optional[Node]:
    """Folds ``proto`` into constants or builds its runtime :class:`Node`;
    records its outputs in ``values``."""
    name = proto.name or f"{proto.op_type}_{index}"
    where = f"node '{name}' ({proto.op_type})"
    if proto.domain not in ("", "ai.onnx"):
        raise AotError(
            f"{where}: operator domain '{proto.domain}' is not "
            f"supported; mlbridge-aot supports: {supported_ops()}"
        )
    budget.check_attribute_tensors(proto, where, max_memory)
    inputs: List[Optional[Value]] = []
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
        attrs = _attributes(proto, where, max_memory)
        folded = [folded[0][attrs.get("start", 0) : attrs.get("end", None)]]
    elif _foldable(proto, present):
        folded = _fold(proto, inputs, opset, where, max_memory)
    else:
        folded = None
    if folded is not None:
        for out, arr in zip(proto.output, folded):
            budget.check_shape(
                f"{where}: output '{out}'", arr.shape, arr.dtype.itemsize, max_memory
            )
            values[out] = Value(out, arr.dtype, arr.shape, arr)
        return None
    impl = OPERATORS.get(proto.op_type)
    if impl is None:
        raise AotError(
            f"{where}: operator {proto.op_type} is not supported; "
            f"mlbridge-aot supports: {supported_ops()}"
        )
    node = Node(proto.op_type, name, inputs, [], _attributes(proto, where, max_memory), opset)
    shapes = impl.infer(node)
    if len(shapes) < len([o for o in proto.output if o]):
        raise AotError(
            f"{where}: produces {len(proto.output)} outputs; "
            f"mlbridge-aot computes only {len(shapes)}"
        )
    for out, (dtype, shape) in zip(proto.output, shapes):
        dtype = np.dtype(dtype)
        if dtype not in CXX_TYPES:
            raise AotError(
                f"{where}: output '{out}' would have element type "
                f"{dtype.name}; only float32 and int64 are supported"
            )
        shape = budget.check_shape(
            f"{where}: output '{out}'", shape, dtype.itemsize, max_memory, runtime=True
        )
        v = Value(out, dtype, shape)
        node.outputs.append(v)
        if out:
            values[out] = v
    return node


def load_graph(
    model: Any,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    max_memory: Optional[int] = None,
) -> Graph:
    """Builds the static :class:`Graph` of ``model`` (a ModelProto, a path or
    bytes). ``input_shapes`` pins the shapes of inputs with dynamic
    dimensions (e.g. ``{"x": [1, 64]}``); every tensor must fit
    ``max_memory`` bytes (default: :data:`budget.DEFAULT_MAX_MEMORY`)."""
    _require_onnx()
    max_memory = budget.optional_max_memory(max_memory)
    model, what = _load_model(model)
    budget.refuse_external_data(model.graph)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise AotError(f"{what} is not a valid ONNX model: {str(e).splitlines()[0]}") from e
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        raise AotError("the model imports no default-domain (ai.onnx) opset")
    g = model.graph
    values: dict = {}
    for init in g.initializer:
        arr = budget.tensor_array(init, f"initializer '{init.name}'", max_memory)
        values[init.name] = Value(init.name, arr.dtype, arr.shape, arr)
    args = _graph_inputs(g, values, dict(input_shapes or {}), max_memory)
    nodes = [
        n
        for n in (
            _node(proto, index, values, opset, max_memory) for index, proto in enumerate(g.node)
        )
        if n is not None
    ]
    results = []
    for vi in g.output:
        _check_io_name(vi.name, "output")
        if vi.name not in values:
            raise AotError(f"output '{vi.name}' is not produced by any node")
        v = values[vi.name]
        if v.dtype not in CXX_TYPES:
            raise AotError(f"output {v.describe()}: only float32 and int64 outputs are supported")
        if v.const is not None:
            budget.check_shape(
                f"output '{vi.name}'", v.shape, v.dtype.itemsize, max_memory, runtime=True
            )
        results.append(v)
    names = [v.name for v in args] + [v.name for v in results]
    if len(set(names)) != len(names):
        raise AotError(
            "an input and an output (or two outputs) share a name; rename them in the model"
        )
    return Graph(
        g.name or "model",
        args,
        results,
        _live_nodes(nodes, results),
        opset,
        g.doc_string,
        _metadata(model),
    )


#: The most metadata entries a module carries, and the bytes of each key or
#: value (include/mlbridge/AotAbi.h: what the runner reads).
MAX_METADATA_ENTRIES = 64
MAX_METADATA_BYTES = 4095


def _metadata(model: Any) -> tuple:
    """The model's metadata_props whose key starts with "mlbridge."."""
    entries = tuple((p.key, p.value) for p in model.metadata_props if p.key.startswith("mlbridge."))
    if len(entries) > MAX_METADATA_ENTRIES:
        raise AotError(
            f"the model has {len(entries)} mlbridge.* metadata entries; "
            f"a module carries at most {MAX_METADATA_ENTRIES}"
        )
    for key, value in entries:
        for text in (key, value):
            if "\0" in text or len(text.encode()) > MAX_METADATA_BYTES:
                raise AotError(
                    f"metadata entry {key[:64]!r}: keys and values are C strings of at "
                    f"most {MAX_METADATA_BYTES} bytes, without NUL characters"
                )
    return entries


def _live_nodes(nodes: list, results: list) -> list:
    """The nodes some result depends on, in their original order."""
    needed = {id(v) for v in results}
    live = []
    for node in reversed(nodes):
        if any(id(o) in needed for o in node.outputs):
            live.append(node)
            needed.update(id(v) for v in node.inputs if v is not None)
    return live[::-1]


__all__ = [
    "CXX_TYPES",
    "RUNTIME_DTYPES",
    "SPEC_TYPES",
    "AotError",
    "Graph",
    "Node",
    "Value",
    "load_graph",
]

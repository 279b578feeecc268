"""What a model may make mlbridge-aot (and the code it generates) allocate.

A model comes from a stranger: every shape it declares is checked here before
anything is allocated for it, so a few hostile bytes cannot make the generator
reserve gigabytes or emit a program that does:

- every tensor: at most ``MAX_RANK`` dimensions (mlbridge's bound for one
  tensor), each in ``[0, MAX_DIM]``, at most ``MAX_ELEMENTS`` elements and at
  most ``max_memory`` bytes; a tensor computed at run time has no zero
  dimension (empty tensors are not supported at run time);
- an initializer or tensor attribute holds exactly the data its dimensions
  declare, in the model itself (external data files are refused: the model
  must not name the files the generator reads);
- a node folded at compile time has its outputs' shapes inferred first, and
  is refused when they exceed the budget;
- the generated model's static memory (its buffers plus its constants) is at
  most ``max_memory`` bytes (:data:`DEFAULT_MAX_MEMORY` unless the caller
  says otherwise: ``mlbridge-aot --max-memory``).

Every failure is an :class:`~mlbridge.aot.errors.AotError` naming the tensor.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from mlbridge.aot.errors import AotError
from mlbridge.tensor_spec import MAX_ELEMENTS, MAX_RANK

#: Whether the optional 'onnx' package is installed; ``onnx``, ``helper`` and
#: ``numpy_helper`` are bound only if it is (load_graph checks first).
HAVE_ONNX: bool
try:
    import onnx
    from onnx import helper, numpy_helper

    HAVE_ONNX = True
except ImportError:  # pragma: no cover - reported by load_graph
    HAVE_ONNX = False


#: Default bound on the static memory of a generated model (1 GiB): its
#: buffers (inputs, outputs, intermediate tensors) plus its constants.
DEFAULT_MAX_MEMORY = 1 << 30

#: Largest dimension: generated code passes dimensions as C++ ``int``
#: template arguments.
MAX_DIM = (1 << 31) - 1


def check_shape(
    what: str, shape: Sequence[Any], itemsize: int, max_memory: int, runtime: bool = False
) -> tuple:
    """``shape`` as a tuple of ints, or AotError naming ``what``. ``runtime``:
    a tensor computed (or passed) at run time, which may not be empty."""
    if len(shape) > MAX_RANK:
        raise AotError(f"{what} has {len(shape)} dimensions; at most {MAX_RANK} are supported")
    dims = tuple(int(d) for d in shape)
    for i, d in enumerate(dims):
        if d < 0:
            raise AotError(f"{what}: dimension {i} is {d}; dimensions must be >= 0")
        if d > MAX_DIM:
            raise AotError(f"{what}: dimension {i} is {d}; at most {MAX_DIM} is supported")
        if d == 0 and runtime:
            raise AotError(
                f"{what}: dimension {i} is 0; mlbridge-aot does not "
                "support empty tensors at run time"
            )
    count = 1
    for d in dims:
        count *= d
    if count > MAX_ELEMENTS:
        raise AotError(
            f"{what}: shape {list(dims)} has {count} elements; at most {MAX_ELEMENTS} are supported"
        )
    if count * itemsize > max_memory:
        raise AotError(
            f"{what}: shape {list(dims)} needs {count * itemsize} bytes, "
            f"more than the memory budget of {max_memory} bytes "
            "(mlbridge-aot --max-memory)"
        )
    return dims


def static_memory(what: str, buffers: int, constants: int, max_memory: int) -> None:
    """Checks the generated model's static memory against the budget."""
    if buffers + constants > max_memory:
        raise AotError(
            f"{what} needs {buffers} bytes of buffers and {constants} bytes "
            f"of constants, more than the memory budget of {max_memory} "
            "bytes (mlbridge-aot --max-memory)"
        )


#: Bytes per element where numpy's stand-in type is wider than the stored one.
_NARROW = {
    getattr(onnx.TensorProto, n): w
    for n, w in (
        ("BFLOAT16", 2),
        ("FLOAT8E4M3FN", 1),
        ("FLOAT8E4M3FNUZ", 1),
        ("FLOAT8E5M2", 1),
        ("FLOAT8E5M2FNUZ", 1),
    )
    if HAVE_ONNX and hasattr(onnx.TensorProto, n)
}


def _itemsize(elem_type: int, what: str) -> int:
    """Bytes of one element of ONNX type ``elem_type`` (1 for 4-bit types)."""
    if elem_type in _NARROW:
        return _NARROW[elem_type]
    try:
        return helper.tensor_dtype_to_np_dtype(elem_type).itemsize
    except (KeyError, ValueError, TypeError):
        raise AotError(f"{what} has an unknown element type ({elem_type})") from None


#: Element types stored two per byte (raw) or per int32_data entry.
_PACKED = {
    getattr(onnx.TensorProto, n)
    for n in ("INT4", "UINT4", "FLOAT4E2M1")
    if HAVE_ONNX and hasattr(onnx.TensorProto, n)
}
#: Element types stored as two numbers each in the typed fields.
_PAIRS = {onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128} if HAVE_ONNX else set()
_TYPED_FIELDS = (
    "float_data",
    "int32_data",
    "string_data",
    "int64_data",
    "double_data",
    "uint64_data",
)


def _refuse_external(t: Any, what: str) -> None:
    if t.data_location == onnx.TensorProto.EXTERNAL or t.external_data:
        raise AotError(
            f"{what} keeps its data in an external file; mlbridge-aot "
            "compiles self-contained models only"
        )


def refuse_external_data(graph: Any) -> None:
    """Refuses a graph (subgraphs included) naming external data files,
    before onnx's checker would look for them."""
    for t in graph.initializer:
        _refuse_external(t, f"initializer '{t.name}'")
    for node in graph.node:
        for a in node.attribute:
            what = f"node '{node.name}' ({node.op_type}): attribute '{a.name}'"
            for t in [a.t] * a.HasField("t") + list(a.tensors):
                _refuse_external(t, what)
            for g in [a.g] * a.HasField("g") + list(a.graphs):
                refuse_external_data(g)


def _check_stored(t: Any, what: str, count: int) -> None:
    """The data ``t`` carries is what its dimensions declare."""
    _refuse_external(t, what)
    if t.HasField("segment"):
        raise AotError(f"{what} is a segment of a tensor; not supported")
    if t.HasField("raw_data"):
        if t.data_type == onnx.TensorProto.STRING:
            raise AotError(f"{what}: a string tensor cannot have raw data")
        stored, unit = len(t.raw_data), "bytes"
        expected = (
            (count + 1) // 2 if t.data_type in _PACKED else count * _itemsize(t.data_type, what)
        )
    else:
        stored, unit = sum(len(getattr(t, f)) for f in _TYPED_FIELDS), "values"
        expected = (
            (count + 1) // 2
            if t.data_type in _PACKED
            else count * (2 if t.data_type in _PAIRS else 1)
        )
    if stored != expected:
        raise AotError(
            f"{what}: shape {list(t.dims)} needs {expected} {unit} of data, "
            f"the model holds {stored}"
        )


def check_tensor(t: Any, what: str, max_memory: int) -> None:
    """Checks TensorProto ``t``: its shape, and that it holds the data it
    declares, in the model (no conversion: nothing is allocated)."""
    dims = check_shape(what, list(t.dims), _itemsize(t.data_type, what), max_memory)
    count = 1
    for d in dims:
        count *= d
    _check_stored(t, what, count)


#: Element types whose typed data ``numpy_helper.to_array`` reads as numbers
#: of the storage type, converted to the element type (float16: their bits).
_NUMBERS = (
    {
        getattr(onnx.TensorProto, n)
        for n in (
            "FLOAT",
            "DOUBLE",
            "FLOAT16",
            "INT8",
            "INT16",
            "INT32",
            "INT64",
            "UINT8",
            "UINT16",
            "UINT32",
            "UINT64",
            "BOOL",
        )
    }
    if HAVE_ONNX
    else set()
)


def tensor_array(t: Any, what: str, max_memory: int) -> Any:
    """The numpy array of TensorProto ``t`` once :func:`check_tensor` passed.
    Typed numbers are copied one at a time (``numpy_helper.to_array`` makes a
    list of Python numbers first: 4 to 8 times the array)."""
    import numpy as np

    check_tensor(t, what, max_memory)
    try:
        if t.data_type in _NUMBERS and not t.HasField("raw_data"):
            values = getattr(t, helper.tensor_dtype_to_field(t.data_type))
            storage = helper.tensor_dtype_to_storage_tensor_dtype(t.data_type)
            stored = np.fromiter(values, helper.tensor_dtype_to_np_dtype(storage), len(values))
            if t.data_type == onnx.TensorProto.FLOAT16:
                array = stored.view(np.float16)
            else:
                array = stored.astype(helper.tensor_dtype_to_np_dtype(t.data_type), copy=False)
            return array.reshape(tuple(t.dims))
        return numpy_helper.to_array(t)
    except Exception as e:  # onnx raises anything on a malformed tensor
        raise AotError(f"{what} is malformed: {e}") from e


def check_attribute_tensors(node: Any, where: str, max_memory: int) -> None:
    """Checks the tensors a node carries as attributes (Constant's value...)
    before anything (folding included) reads them."""
    for a in node.attribute:
        what = f"{where}: attribute '{a.name}'"
        if a.type == onnx.AttributeProto.TENSOR:
            check_tensor(a.t, what, max_memory)
        elif a.type == onnx.AttributeProto.TENSORS:
            for t in a.tensors:
                check_tensor(t, what, max_memory)
        elif a.type == onnx.AttributeProto.SPARSE_TENSOR:
            check_shape(
                what,
                list(a.sparse_tensor.dims),
                _itemsize(a.sparse_tensor.values.data_type, what),
                max_memory,
            )
            check_tensor(a.sparse_tensor.values, what + " (values)", max_memory)
            check_tensor(a.sparse_tensor.indices, what + " (indices)", max_memory)


def check_folded_outputs(node: Any, inputs: list, opset: int, where: str, max_memory: int) -> None:
    """Infers the output shapes of a node about to be folded (with the values
    of its small integer inputs: shapes, repeats...) and refuses outputs over
    the budget. Best effort: an output whose shape cannot be inferred is
    checked after folding."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except Exception:  # unknown operator: folding reports it
        return
    types, data = {}, {}
    for name, v in zip(node.input, inputs):
        if not name or v is None:
            continue
        try:
            elem = helper.np_dtype_to_tensor_dtype(v.dtype)
        except (KeyError, ValueError, TypeError):
            return
        types[name] = helper.make_tensor_type_proto(elem, list(v.shape))
        if v.const.dtype.kind in "iu" and v.const.size <= 64:
            data[name] = numpy_helper.from_array(v.const, name)
    try:
        outputs = onnx.shape_inference.infer_node_outputs(
            schema, node, types, data, opset_imports=[helper.make_opsetid("", opset)]
        )
    except Exception:  # inference is best effort: checked after folding
        return
    for name, tp in outputs.items():
        tt = tp.tensor_type
        if not tt.HasField("shape") or not all(d.HasField("dim_value") for d in tt.shape.dim):
            continue
        check_shape(
            f"{where}: output '{name}'",
            [d.dim_value for d in tt.shape.dim],
            _itemsize(tt.elem_type, where),
            max_memory,
        )


def optional_max_memory(value: Optional[int]) -> int:
    """The budget in force: ``value`` or :data:`DEFAULT_MAX_MEMORY`."""
    if value is None:
        return DEFAULT_MAX_MEMORY
    if int(value) <= 0:
        raise AotError(f"the memory budget must be > 0 bytes, got {value}")
    return int(value)

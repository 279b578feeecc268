"""ONNX helpers for the ML side: check a model against the compiler's specs,
and export PyTorch policies with the runner's tensor names.

``check_model`` catches, before a model reaches a compiler, what
OnnxModelRunner would refuse at load time: a model input no spec provides, an
output the compiler expects but the model lacks, another element type, an
incompatible static shape. torch is optional (``export_torch`` imports it on
use).
"""

from __future__ import annotations

from typing import Any, List, Sequence

from mlbridge.errors import MlbridgeError
from mlbridge.input_files import read_regular_file
from mlbridge.limits import MAX_ONNX_MODEL_BYTES
from mlbridge.tensor_spec import DTYPES, TensorSpec

#: ONNX TensorProto element type -> LLVM type name.
_ONNX_TYPES = {
    1: "float",
    11: "double",
    3: "int8_t",
    2: "uint8_t",
    5: "int16_t",
    4: "uint16_t",
    6: "int32_t",
    12: "uint32_t",
    7: "int64_t",
    13: "uint64_t",
}


class ModelCheckError(MlbridgeError):
    """A model does not fit the declared specs (all problems in the message)."""


def _dims(value_info: Any) -> List[int]:
    """Static dims as ints, symbolic or unknown ones as -1."""
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") else -1 for d in shape.dim]


def _shape_fits(dims: List[int], spec: TensorSpec) -> bool:
    known = 1
    for d in dims:
        if d >= 0:
            known *= d
    if any(d < 0 for d in dims):
        return (
            known == 0
            and spec.element_count == 0
            or (known > 0 and spec.element_count % known == 0)
        )
    return known == spec.element_count


def check_model(
    model: Any, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]
) -> List[str]:
    """Problems of ``model`` (a path or an onnx.ModelProto) against the specs;
    an empty list when it fits. Runner inputs the model does not use are
    fine (the compiler may send more features than a model knows)."""
    import onnx

    if isinstance(model, str):  # a regular file, read once (ModelCheckError if not)
        proto = onnx.load_from_string(
            read_regular_file(model, MAX_ONNX_MODEL_BYTES, ModelCheckError)
        )
    else:
        proto = model
    try:
        onnx.checker.check_model(proto)
    except Exception as err:  # onnx.checker.ValidationError and kin
        return [f"invalid ONNX model: {err}"]
    graph = proto.graph
    initialisers = {init.name for init in graph.initializer}
    problems: List[str] = []
    by_name = {spec.name: spec for spec in inputs}
    for value in graph.input:
        if value.name in initialisers:
            continue
        spec = by_name.get(value.name)
        if spec is None:
            problems.append(f"model input '{value.name}' has no input spec")
            continue
        problems += _compare(value, spec, "input")
    produced = {value.name: value for value in graph.output}
    for spec in outputs:
        value = produced.get(spec.name)
        if value is None:
            problems.append(
                f"the compiler expects output '{spec.name}', the model has "
                f"{', '.join(produced) or 'none'}"
            )
            continue
        problems += _compare(value, spec, "output")
    return problems


def _compare(value: Any, spec: TensorSpec, role: str) -> List[str]:
    elem = value.type.tensor_type.elem_type
    type_name = _ONNX_TYPES.get(elem, f"ONNX type {elem}")
    problems = []
    if type_name != spec.type_name:
        problems.append(
            f"model {role} '{spec.name}' is {type_name}, the spec says {spec.type_name}"
        )
    dims = _dims(value)
    if not _shape_fits(dims, spec):
        problems.append(f"model {role} '{spec.name}' has shape {dims}, the spec {list(spec.shape)}")
    return problems


def require_fit(model: Any, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]) -> None:
    """Raise ModelCheckError listing every problem of :func:`check_model`."""
    problems = check_model(model, inputs, outputs)
    if problems:
        raise ModelCheckError("; ".join(problems))


def export_torch(
    module: Any,
    path: str,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    opset: int = 17,
) -> None:
    """Export a torch.nn.Module whose forward takes the inputs in spec order
    and returns the outputs in spec order, naming the graph's inputs and
    outputs after the specs; then check the file against the specs."""
    try:
        import torch
    except ImportError:
        raise MlbridgeError(
            "export_torch needs PyTorch (optional; e.g. Debian's python3-torch)"
        ) from None
    examples = tuple(
        torch.zeros(spec.shape, dtype=getattr(torch, _TORCH[spec.type_name])) for spec in inputs
    )
    torch.onnx.export(
        module,
        examples,
        path,
        input_names=[s.name for s in inputs],
        output_names=[s.name for s in outputs],
        opset_version=opset,
    )
    require_fit(path, inputs, outputs)


_TORCH = {
    "float": "float32",
    "double": "float64",
    "int8_t": "int8",
    "uint8_t": "uint8",
    "int16_t": "int16",
    "uint16_t": "int16",
    "int32_t": "int32",
    "uint32_t": "int32",
    "int64_t": "int64",
    "uint64_t": "int64",
}
assert set(_TORCH) == set(DTYPES)

__all__ = ["ModelCheckError", "check_model", "export_torch", "require_fit"]

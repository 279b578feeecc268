"""The weights of a policy someone hands over as ONNX, to fine-tune it.

The file is untrusted. It is read once (a regular file of at most
``max_bytes``: :func:`mlbridge.input_files.read_regular_file`), and what
reading it allocates is budgeted by its size: before protobuf parses the
bytes, the memory the parsed model would take is estimated from them
(every message, number and string: an empty message of two bytes takes
protobuf some 150), and the model is refused when that estimate and the
weights converted from it would exceed :data:`MEMORY_PER_BYTE` bytes per
byte of the file (plus 1 MiB). A file with external data, or a tensor whose
data is not what its shape declares, is refused with
:class:`~mlbridge.errors.MlbridgeError` before any weight is used; the
callers then check that the graph is the network they expect.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.input_files import read_regular_file
from mlbridge.limits import DEFAULT_MAX_BYTES

#: What the parsed model and its converted weights may take, per byte of the
#: file (a model's weights take about one: the parsed copy and the array).
MEMORY_PER_BYTE = 4
#: Most protobuf fields read (a policy's model has a few thousand).
MAX_FIELDS = 1 << 20
#: Deepest nesting of messages (protobuf's own limit).
MAX_DEPTH = 100
#: The estimate's costs: a message with its place in its parent (onnx.proto's
#: take protobuf at most about 190 bytes), a number of a repeated field, a
#: string or bytes (plus its length).
_MESSAGE_BYTES, _NUMBER_BYTES, _STRING_BYTES = 256, 16, 32


class OnnxWeights(NamedTuple):
    """A model read by :func:`read_weights`."""

    #: The names of the graph's inputs.
    inputs: List[str]
    #: The initializers asked for, as arrays.
    weights: Dict[str, np.ndarray]
    #: The parsed ``onnx.ModelProto``.
    model: Any
    #: The SHA-256 of the bytes read (hex).
    sha256: str


def read_weights(
    path: Path, wanted: Callable[[str], bool], max_bytes: int = DEFAULT_MAX_BYTES
) -> OnnxWeights:
    """The ONNX model at ``path`` with the initializers whose names
    ``wanted`` accepts as arrays."""
    from mlbridge.aot.budget import DEFAULT_MAX_MEMORY, tensor_array
    from onnx import ModelProto, helper

    data = read_regular_file(path, max_bytes)
    sha256 = hashlib.sha256(data).hexdigest()
    budget = _Budget(path, MEMORY_PER_BYTE * len(data) + (1 << 20))
    try:
        budget.message(data, 0, len(data), ModelProto.DESCRIPTOR, 0)
        model = ModelProto()
        model.ParseFromString(data)
    except MlbridgeError:
        raise
    except Exception as err:  # protobuf raises DecodeError, ValueError, ...
        raise MlbridgeError(f"{path}: not an ONNX model ({err})") from None
    del data
    graph = model.graph
    weights = {}
    for t in graph.initializer:
        if wanted(t.name):
            what = f"initializer '{t.name}'"
            try:  # the array's bytes, charged before it exists (tensor_array checks the rest)
                itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
            except (KeyError, ValueError, TypeError):
                itemsize = 0
            budget.charge(math.prod(max(d, 0) for d in t.dims) * itemsize, what)
            weights[t.name] = tensor_array(t, f"{path}: {what}", DEFAULT_MAX_MEMORY)
    return OnnxWeights([i.name for i in graph.input], weights, model, sha256)


class _Budget:
    """Memory left to what reading the model at ``path`` allocates."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.left, self.limit, self.fields = path, limit, limit, MAX_FIELDS

    def charge(self, nbytes: int, what: str = "the parsed model") -> None:
        self.left -= nbytes
        if self.left < 0:
            raise MlbridgeError(
                f"{self.path}: {what} would take more than {self.limit} bytes of memory, "
                f"{MEMORY_PER_BYTE} per byte of the file (and 1 MiB)"
            )

    def message(self, data: bytes, start: int, end: int, descriptor: Any, depth: int) -> None:
        """Charges what protobuf allocates to parse ``data[start:end]`` as a
        message of type ``descriptor`` (ValueError when it is malformed)."""
        from google.protobuf.descriptor import FieldDescriptor as F

        if depth > MAX_DEPTH:
            raise MlbridgeError(f"{self.path}: messages nested deeper than {MAX_DEPTH}")
        self.charge(_MESSAGE_BYTES)
        pos = start
        while pos < end:
            self.fields -= 1
            if self.fields < 0:
                raise MlbridgeError(f"{self.path}: more than {MAX_FIELDS} protobuf fields")
            key, pos = _varint(data, pos, end)
            field, wire = descriptor.fields_by_number.get(key >> 3), key & 7
            if wire == 0:
                pos = _varint(data, pos, end)[1]
                cost = _NUMBER_BYTES
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
                cost = _NUMBER_BYTES
            elif wire == 2:
                size, pos = _varint(data, pos, end)
                if pos + size > end:
                    raise ValueError("truncated field")
                if field is not None and field.type == F.TYPE_MESSAGE:
                    self.message(data, pos, pos + size, field.message_type, depth + 1)
                    cost = 0
                elif field is not None and field.type not in (F.TYPE_STRING, F.TYPE_BYTES):
                    # Packed numbers: at least one byte each (4 or 8 when fixed).
                    fixed = _FIXED_SIZES.get(field.type)
                    cost = size if fixed else size * _NUMBER_BYTES
                else:
                    cost = _STRING_BYTES + size
                pos += size
            else:
                raise ValueError(f"wire type {wire} of field {key >> 3}")
            self.charge(cost)
        if pos != end:
            raise ValueError("truncated field")


def _varint(data: bytes, pos: int, end: int) -> Tuple[int, int]:
    """The varint at ``data[pos:end]`` and the position after it."""
    value = shift = 0
    while pos < end and shift < 70:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos
    raise ValueError("truncated or overlong varint")


#: Bytes of one number of the fixed-size protobuf types, by FieldDescriptor
#: type (TYPE_DOUBLE, TYPE_FLOAT, TYPE_FIXED64, TYPE_FIXED32, TYPE_SFIXED32,
#: TYPE_SFIXED64); packed, they take that in memory too.
_FIXED_SIZES = {1: 8, 2: 4, 6: 8, 7: 4, 15: 4, 16: 8}

"""TensorSpec: LLVM's description of a tensor (name, element type, shape, port)."""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Type

import numpy as np

#: LLVM type name -> little-endian numpy dtype, in mlbridge's DType order.
DTYPES: Dict[str, np.dtype] = {
    "float": np.dtype("<f4"),
    "double": np.dtype("<f8"),
    "int8_t": np.dtype("i1"),
    "uint8_t": np.dtype("u1"),
    "int16_t": np.dtype("<i2"),
    "uint16_t": np.dtype("<u2"),
    "int32_t": np.dtype("<i4"),
    "uint32_t": np.dtype("<u4"),
    "int64_t": np.dtype("<i8"),
    "uint64_t": np.dtype("<u8"),
}

#: LLVM type name -> value of the mlbridge.v1.DType protobuf enum.
PROTO_DTYPES: Dict[str, int] = {name: i + 1 for i, name in enumerate(DTYPES)}

#: Largest element count accepted for one tensor (bounds every decoder).
MAX_ELEMENTS = 1 << 40

#: Largest number of dimensions accepted for one tensor (numpy's portable bound).
MAX_RANK = 32


#: Ports are 32-bit signed integers (LLVM's ``int``, the protobuf ``int32``).
PORT_LIMIT = 1 << 31


class SpecError(ValueError):
    """A TensorSpec (or a JSON description of one) is invalid."""


def _integer(value: Any) -> Optional[int]:
    """``value`` as an int when it is an integer (Python or numpy, not a bool), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _excerpt(value: Any, limit: int = 80) -> str:
    """A bounded repr of a value from a peer, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def type_name_of(dtype: Any) -> str:
    """Return LLVM's type name ("int64_t", ...) for a numpy dtype-like."""
    dt = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).itemsize > 1 else np.dtype(dtype)
    for name, candidate in DTYPES.items():
        if candidate == dt:
            return name
    raise SpecError(
        f"unsupported dtype {np.dtype(dtype)}; mlbridge carries "
        f"{', '.join(DTYPES)} (booleans as uint8_t)"
    )


@dataclass(frozen=True)
class TensorSpec:
    """A named tensor of a fixed element type and row-major shape.

    ``type_name`` is LLVM's name of the element type (``"float"``,
    ``"int64_t"``, ...). A scalar has shape ``()``.
    """

    name: str
    type_name: str
    shape: Tuple[int, ...] = field(default=(1,))
    port: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SpecError("tensor name must be a non-empty string")
        if not isinstance(self.type_name, str) or self.type_name not in DTYPES:
            raise SpecError(f"tensor '{self.name}': unknown type {_excerpt(self.type_name)}")
        port = _integer(self.port)
        if port is None or not -PORT_LIMIT <= port < PORT_LIMIT:
            raise SpecError(
                f"tensor '{self.name}': port {_excerpt(self.port)} is not a 32-bit integer"
            )
        try:
            dims = tuple(self.shape)
        except TypeError:
            raise SpecError(
                f"tensor '{self.name}': shape {_excerpt(self.shape)} is not a sequence of integers"
            ) from None
        if len(dims) > MAX_RANK:
            raise SpecError(
                f"tensor '{self.name}': {len(dims)} dimensions, at most {MAX_RANK} are supported"
            )
        shape = tuple(map(_integer, dims))
        count = 1
        for dim, given in zip(shape, dims):
            if dim is None:
                raise SpecError(
                    f"tensor '{self.name}': dimension {_excerpt(given)} is not an integer"
                )
            if dim < 0:
                raise SpecError(f"tensor '{self.name}': negative dimension {dim}")
            if dim > MAX_ELEMENTS:
                raise SpecError(
                    f"tensor '{self.name}': dimension {dim} is larger than {MAX_ELEMENTS}"
                )
            count *= dim
        if count > MAX_ELEMENTS:
            raise SpecError(
                f"tensor '{self.name}': shape {list(shape)} is too large "
                f"(more than {MAX_ELEMENTS} elements)"
            )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "port", port)
        # Cached: asked for on every decode.
        object.__setattr__(self, "_count", count)
        object.__setattr__(self, "_nbytes", count * DTYPES[self.type_name].itemsize)

    @classmethod
    def of(cls, name: str, dtype: Any, shape: Sequence[int] = (1,), port: int = 0) -> "TensorSpec":
        """Make a spec from a numpy dtype-like (``np.float32``, ``"int64"``...)."""
        return cls(name, type_name_of(dtype), tuple(shape), port)

    @property
    def dtype(self) -> np.dtype:
        """The little-endian numpy dtype of the elements."""
        return DTYPES[self.type_name]

    @property
    def proto_dtype(self) -> int:
        """The mlbridge.v1.DType enum value."""
        return PROTO_DTYPES[self.type_name]

    @property
    def element_count(self) -> int:
        """Number of elements (1 for a scalar)."""
        return self._count  # type: ignore[attr-defined]

    @property
    def nbytes(self) -> int:
        """Size of the packed tensor in bytes."""
        return self._nbytes  # type: ignore[attr-defined]

    def to_json(self) -> Dict[str, Any]:
        """LLVM's JSON form as a dict (key order name, type, port, shape)."""
        return {
            "name": self.name,
            "type": self.type_name,
            "port": self.port,
            "shape": list(self.shape),
        }

    def to_json_str(self) -> str:
        """LLVM's JSON form, canonical text (no whitespace)."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, obj: object) -> "TensorSpec":
        """Parse LLVM's JSON form (a dict); SpecError names what is wrong
        (``obj`` is untrusted: anything that is not a JSON object is refused)."""
        if not isinstance(obj, Mapping):
            raise SpecError(f"tensor spec must be a JSON object, got {type(obj).__name__}")
        try:
            name, type_name, shape = obj["name"], obj["type"], obj["shape"]
        except KeyError as missing:
            raise SpecError(f"tensor spec {_excerpt(obj)} lacks key {missing}") from None
        if not isinstance(shape, list):
            raise SpecError(f"tensor {_excerpt(name)}: shape must be a list of integers")
        return cls(name, type_name, tuple(shape), obj.get("port", 0))

    def check(self, value: Any) -> np.ndarray:
        """Convert ``value`` to a contiguous array of this spec, or raise.

        Scalars and lists are accepted when their element count matches; the
        dtype is converted only when no value changes (e.g. a Python int 1 to
        float is fine, 1.5 to int64 is not).
        """
        arr = np.asarray(value)
        if arr.size != self.element_count:
            raise SpecError(
                f"tensor '{self.name}': expected {self.element_count} "
                f"elements (shape {list(self.shape)}), got {arr.size}"
            )
        if arr.dtype != self.dtype:
            converted = arr.astype(self.dtype)
            with np.errstate(invalid="ignore"):
                same = np.array_equal(
                    converted.astype(arr.dtype), arr, equal_nan=arr.dtype.kind == "f"
                )
            if not same:
                raise SpecError(
                    f"tensor '{self.name}': values of dtype {arr.dtype} do not fit {self.type_name}"
                )
            arr = converted
        return np.ascontiguousarray(arr.reshape(self.shape))


def check_unique_names(
    specs: Iterable[TensorSpec], what: str, error: Type[Exception] = SpecError
) -> None:
    """Raise ``error`` naming the first tensor name that ``specs`` declare twice.

    Every list of specs that comes from a peer goes through this check:
    tensors are looked up by name, so a duplicate would silently shadow one.
    """
    seen = set()
    for spec in specs:
        if spec.name in seen:
            raise error(f"{what}: tensor '{spec.name}' is declared twice")
        seen.add(spec.name)


def specs_from_json(items: Any, what: str) -> List[TensorSpec]:
    """Parse a peer's JSON list of LLVM tensor specs (names unique), or SpecError."""
    if not isinstance(items, list):
        raise SpecError(f"{what} must be a list of tensor specs, got {type(items).__name__}")
    specs = []
    for index, item in enumerate(items):
        try:
            specs.append(TensorSpec.from_json(item))
        except SpecError as err:
            raise SpecError(f"{what}[{index}]: {err}") from None
    check_unique_names(specs, what)
    return specs

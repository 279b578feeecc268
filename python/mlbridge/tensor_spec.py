"""TensorSpec: LLVM's description of a tensor (name, element type, shape, port)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Sequence, Tuple

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


class SpecError(ValueError):
    """A TensorSpec (or a JSON description of one) is invalid."""


def type_name_of(dtype: Any) -> str:
    """Return LLVM's type name ("int64_t", ...) for a numpy dtype-like."""
    dt = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).itemsize > 1 else np.dtype(dtype)
    for name, candidate in DTYPES.items():
        if candidate == dt:
            return name
    raise SpecError(f"unsupported dtype {np.dtype(dtype)}; mlbridge carries "
                    f"{', '.join(DTYPES)} (booleans as uint8_t)")


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
        if self.type_name not in DTYPES:
            raise SpecError(f"tensor '{self.name}': unknown type '{self.type_name}'")
        if len(self.shape) > MAX_RANK:
            raise SpecError(f"tensor '{self.name}': {len(self.shape)} dimensions, at most "
                            f"{MAX_RANK} are supported")
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise SpecError(f"tensor '{self.name}': negative dimension in {list(shape)}")
        count = 1
        for d in shape:
            count *= d
        if count > MAX_ELEMENTS:
            raise SpecError(f"tensor '{self.name}': shape {list(shape)} is too large")
        object.__setattr__(self, "shape", shape)
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
        return {"name": self.name, "type": self.type_name, "port": self.port,
                "shape": list(self.shape)}

    def to_json_str(self) -> str:
        """LLVM's JSON form, canonical text (no whitespace)."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "TensorSpec":
        """Parse LLVM's JSON form (a dict)."""
        if not isinstance(obj, Mapping):
            raise SpecError(f"tensor spec must be a JSON object, got {obj!r}")
        try:
            name, type_name, shape = obj["name"], obj["type"], obj["shape"]
        except KeyError as missing:
            raise SpecError(f"tensor spec {obj!r} lacks key {missing}") from None
        if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
            raise SpecError(f"tensor '{name}': shape must be a list of integers")
        port = obj.get("port", 0)
        if not isinstance(port, int):
            raise SpecError(f"tensor '{name}': port must be an integer")
        return cls(str(name), str(type_name), tuple(shape), port)

    def check(self, value: Any) -> np.ndarray:
        """Convert ``value`` to a contiguous array of this spec, or raise.

        Scalars and lists are accepted when their element count matches; the
        dtype is converted only when no value changes (e.g. a Python int 1 to
        float is fine, 1.5 to int64 is not).
        """
        arr = np.asarray(value)
        if arr.size != self.element_count:
            raise SpecError(f"tensor '{self.name}': expected {self.element_count} "
                            f"elements (shape {list(self.shape)}), got {arr.size}")
        if arr.dtype != self.dtype:
            converted = arr.astype(self.dtype)
            with np.errstate(invalid="ignore"):
                same = np.array_equal(converted.astype(arr.dtype), arr, equal_nan=arr.dtype.kind == "f")
            if not same:
                raise SpecError(f"tensor '{self.name}': values of dtype {arr.dtype} "
                                f"do not fit {self.type_name}")
            arr = converted
        return np.ascontiguousarray(arr.reshape(self.shape))

"""Checks shared by every codec: sizes, shapes, and matching to the schema.

A public module: the codecs, the training-log reader and the gRPC client use
it, and so can a user's own codec or transport. Everything here raises
:class:`mlbridge.errors.CodecError` naming the tensor at fault.

- :func:`check_payload_size`: refuse a payload over ``max_bytes`` before
  looking inside it (``DEFAULT_MAX_BYTES`` is :mod:`mlbridge.limits`' bound).
- :func:`arrays_for`: the values to *encode*, as contiguous arrays in schema
  order, converted only when no value changes.
- :class:`SchemaMatcher`: the tensors of one *decoded* message matched to the
  declared specs (name, type, element count; none missing, none twice).
- :func:`array_from_bytes`: raw little-endian bytes as the values of a spec.
- :func:`element_count`: the product of an untrusted shape, bounded.

>>> matcher = SchemaMatcher(specs, "request")
>>> spec = matcher.spec_for("x", "float", [1])
>>> matcher.add_bytes(spec, payload_bytes)
>>> tensors = matcher.finish()
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Set

import numpy as np

from mlbridge.errors import CodecError
from mlbridge.limits import DEFAULT_MAX_BYTES
from mlbridge.tensor_spec import MAX_ELEMENTS, SpecError, TensorSpec, check_unique_names

__all__ = [
    "DEFAULT_MAX_BYTES",
    "SchemaMatcher",
    "array_from_bytes",
    "arrays_for",
    "check_payload_size",
    "element_count",
]


def check_payload_size(payload: bytes, max_bytes: int, what: str) -> None:
    """Reject a payload bigger than ``max_bytes`` before looking inside it."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise CodecError(f"{what}: payload must be bytes, got {type(payload).__name__}")
    if len(payload) > max_bytes:
        raise CodecError(
            f"{what}: payload of {len(payload)} bytes exceeds the maximum of {max_bytes} bytes"
        )


def arrays_for(
    specs: Sequence[TensorSpec], tensors: Mapping[str, Any], what: str
) -> List[np.ndarray]:
    """The values of ``tensors`` as contiguous arrays in schema order.

    Every declared tensor must be present and no other; values are converted
    to the declared dtype only when no value changes (see TensorSpec.check).
    """
    if len(tensors) != len(specs) or any(spec.name not in tensors for spec in specs):
        check_unique_names(specs, what, CodecError)
        declared = {spec.name for spec in specs}
        missing = [spec.name for spec in specs if spec.name not in tensors]
        if missing:
            raise CodecError(f"{what}: tensor '{missing[0]}' is missing")
        extra = [name for name in tensors if name not in declared]
        raise CodecError(f"{what}: tensor '{extra[0]}' is not declared")
    arrays = []
    with np.errstate(invalid="ignore", over="ignore"):  # failed casts are reported below
        for spec in specs:
            try:
                arrays.append(spec.check(tensors[spec.name]))
            except SpecError as err:
                raise CodecError(f"{what}: {err}") from None
            except (TypeError, ValueError, OverflowError) as err:
                raise CodecError(
                    f"{what}: tensor '{spec.name}': cannot convert the value "
                    f"to {spec.type_name}: {err}"
                ) from None
    return arrays


def element_count(name: str, shape: Sequence[Any], what: str) -> int:
    """Product of an untrusted shape, bounded by MAX_ELEMENTS (no overflow)."""
    count = 1
    for dim in shape:
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise CodecError(f"{what}: tensor '{name}': shape {list(shape)!r} must hold integers")
        if dim < 0 or dim > MAX_ELEMENTS:
            raise CodecError(f"{what}: tensor '{name}': bad dimension {dim} in shape")
        count *= dim
        if count > MAX_ELEMENTS:
            raise CodecError(
                f"{what}: tensor '{name}': shape {list(shape)} has more "
                f"than {MAX_ELEMENTS} elements"
            )
    return count


class SchemaMatcher:
    """Matches the tensors of one decoded message to the declared specs.

    Use one per message: ``spec_for`` each tensor (in any order), then
    ``finish`` to check that none is missing.
    """

    def __init__(self, specs: Sequence[TensorSpec], what: str) -> None:
        self._specs = {spec.name: spec for spec in specs}
        if len(self._specs) != len(specs):
            check_unique_names(specs, what, CodecError)
        self._order = specs
        self._seen: Dict[str, np.ndarray] = {}
        self._claimed: Set[str] = set()
        self.what = what

    def spec_for(self, name: Any, type_name: str, shape: Sequence[Any]) -> TensorSpec:
        """The declared spec of a received tensor; checks name, type and count."""
        if not isinstance(name, str):
            raise CodecError(f"{self.what}: tensor name must be a string, got {name!r}")
        spec = self._specs.get(name)
        if spec is None:
            raise CodecError(f"{self.what}: tensor '{name}' is not declared")
        if name in self._claimed:
            raise CodecError(f"{self.what}: tensor '{name}' appears twice")
        if type_name != spec.type_name:
            raise CodecError(
                f"{self.what}: tensor '{name}' has type {type_name}, declared {spec.type_name}"
            )
        count = element_count(name, shape, self.what)
        if count != spec.element_count:
            raise CodecError(
                f"{self.what}: tensor '{name}' has {count} elements "
                f"(shape {list(shape)}), declared {spec.element_count} "
                f"(shape {list(spec.shape)})"
            )
        self._claimed.add(name)
        return spec

    def add_bytes(self, spec: TensorSpec, data: bytes) -> None:
        """Record the raw little-endian bytes of ``spec`` (size checked)."""
        self.add(spec, array_from_bytes(spec, data, self.what))

    def add(self, spec: TensorSpec, values: np.ndarray) -> None:
        """Record the decoded values of ``spec`` (reshaped to the declared shape)."""
        self._seen[spec.name] = values.reshape(spec.shape)

    def finish(self) -> Dict[str, np.ndarray]:
        """The decoded tensors in schema order; every declared one must be there."""
        if len(self._seen) != len(self._order):
            for spec in self._order:
                if spec.name not in self._seen:
                    raise CodecError(f"{self.what}: tensor '{spec.name}' is missing")
        return {spec.name: self._seen[spec.name] for spec in self._order}


def array_from_bytes(spec: TensorSpec, data: bytes, what: str) -> np.ndarray:
    """A writable copy of ``data`` as the values of ``spec`` (size checked)."""
    if len(data) != spec.nbytes:
        raise CodecError(
            f"{what}: tensor '{spec.name}' carries {len(data)} bytes, "
            f"expected {spec.nbytes} ({spec.element_count} x {spec.type_name})"
        )
    return np.frombuffer(data, dtype=spec.dtype).reshape(spec.shape).copy()

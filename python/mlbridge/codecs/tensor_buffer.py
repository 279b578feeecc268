"""TensorBuffer: one reusable buffer holding every tensor of a schema.

A host decodes each request of a session into the same buffer (no arrays are
made per decision) and hands the policy the same read-only views every time.
Pass it as ``decode_request(payload, specs, into=buffer)``.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

import numpy as np

from mlbridge.codecs.schema import SchemaMatcher, array_from_bytes
from mlbridge.errors import CodecError
from mlbridge.tensor_spec import TensorSpec, check_unique_names


class TensorBuffer:
    """Contiguous storage for ``specs``, in order, with a view per tensor.

    ``views`` are read-only arrays shaped per spec; ``writable`` are the same
    memory, writable. Both stay valid for the buffer's lifetime; their values
    change with every decode.
    """

    def __init__(self, specs: Sequence[TensorSpec], trailing: int = 0) -> None:
        """``trailing`` extra bytes follow the tensors in ``buffer`` (e.g. the
        newline that ends an mlgo observation record). The caller has checked
        the size (:func:`mlbridge.limits.check_schema`); names must be unique."""
        self.specs = list(specs)
        check_unique_names(self.specs, "tensor buffer", CodecError)
        self.nbytes = sum(spec.nbytes for spec in self.specs)
        self._sizes = [spec.nbytes for spec in self.specs]
        self.buffer = bytearray(self.nbytes + trailing)
        self.memory = memoryview(self.buffer)
        self.views: Dict[str, np.ndarray] = {}
        self.spans: Dict[str, memoryview] = {}
        #: Every tensor's bytes, in order, as one writable uint8 array.
        self.data_bytes = np.frombuffer(self.buffer, np.uint8, self.nbytes)
        #: Per-codec decoding state cached for this schema (e.g. layouts).
        self.layouts: Dict[str, Any] = {}
        self.writable: Dict[str, np.ndarray] = {}
        offset = 0
        for spec in self.specs:
            arr = np.frombuffer(self.buffer, spec.dtype, spec.element_count, offset).reshape(
                spec.shape
            )
            self.writable[spec.name] = arr
            view = arr.view()
            view.flags.writeable = False
            self.views[spec.name] = view
            self.spans[spec.name] = self.memory[offset : offset + spec.nbytes]
            offset += spec.nbytes

    def fill(self, raw: bytes, what: str) -> Dict[str, np.ndarray]:
        """Copy the concatenated raw bytes of every tensor; return the views."""
        if len(raw) != self.nbytes:
            raise CodecError(
                f"{what}: payload has {len(raw)} bytes, the schema needs exactly {self.nbytes}"
            )
        self.memory[: self.nbytes] = raw
        return self.views

    def fill_parts(self, parts: Sequence[bytes], what: str) -> Dict[str, np.ndarray]:
        """Copy one raw byte string per tensor (schema order); return the views.

        Every part must have its tensor's exact size; an error names the first
        one that does not.
        """
        if len(parts) != len(self.specs):
            raise CodecError(f"{what}: {len(parts)} tensors, the schema declares {len(self.specs)}")
        if list(map(len, parts)) != self._sizes:
            for spec, data in zip(self.specs, parts):
                if len(data) != spec.nbytes:
                    raise CodecError(
                        f"{what}: input '{spec.name}' carries {len(data)} "
                        f"bytes, expected {spec.nbytes} "
                        f"({spec.element_count} x {spec.type_name})"
                    )
        self.memory[: self.nbytes] = b"".join(parts)
        return self.views

    def matcher(self, what: str) -> SchemaMatcher:
        """A matcher that stores decoded tensors in this buffer."""
        return _BufferMatcher(self, what)


class _BufferMatcher(SchemaMatcher):
    """SchemaMatcher whose tensors land in a TensorBuffer."""

    def __init__(self, target: TensorBuffer, what: str) -> None:
        super().__init__(target.specs, what)
        self._target = target

    def add(self, spec: TensorSpec, values: np.ndarray) -> None:
        self._target.writable[spec.name][...] = values.reshape(spec.shape)
        self._seen[spec.name] = self._target.views[spec.name]

    def add_bytes(self, spec: TensorSpec, data: bytes) -> None:
        if len(data) != spec.nbytes:
            array_from_bytes(spec, data, self.what)  # raises the size error
        self._target.spans[spec.name][:] = data
        self._seen[spec.name] = self._target.views[spec.name]

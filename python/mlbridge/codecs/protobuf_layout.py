"""Fast path for canonical protobuf requests of a fixed schema.

For a fixed list of specs, the canonical ``TensorMessage`` encoding (what the
official serialiser and the C++ codec write) has the same bytes everywhere
except the observation varint and the tensors' data, and the data sits at
fixed offsets. A payload whose constant bytes all match (one regular
expression match) is therefore decoded by one copy instead of a parse;
anything else (another field order, unknown fields, a size mismatch) returns
None and takes the general path, so the result is always what the full
parser would give.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

import numpy as np

from mlbridge.tensor_spec import TensorSpec


def tensor_heads(pb2, specs: Sequence[TensorSpec]) -> List[bytes]:
    """The canonical bytes of each tensor of ``specs`` (a ``tensors`` entry
    of a TensorMessage) up to its data, which comes last (field 4) and has a
    fixed size: a message with observation 0 (not written) is each head
    followed by its tensor's raw bytes, in order."""
    heads = []
    for spec in specs:
        tensor = pb2.TensorMessage()
        tensor.tensors.add(
            name=spec.name, dtype=spec.proto_dtype, shape=spec.shape, data=bytes(spec.nbytes)
        )
        piece = tensor.SerializeToString()
        heads.append(piece[: len(piece) - spec.nbytes])
    return heads


def _any_bytes(count: int) -> bytes:
    """A pattern matching exactly ``count`` bytes (repeat counts stay small)."""
    chunks, rest = divmod(count, 1 << 16)
    return (b"(?:.{65536}){%d}" % chunks if chunks else b"") + (b".{%d}" % rest if rest else b"")


class CanonicalLayout:
    """Where the constant and the data bytes of a canonical request lie."""

    def __init__(self, pb2, specs: Sequence[TensorSpec]) -> None:
        pattern: List[bytes] = []
        data_index: List[int] = []
        offset = 0
        for spec, head in zip(specs, tensor_heads(pb2, specs)):
            pattern.append(re.escape(head))
            if spec.nbytes:
                pattern.append(_any_bytes(spec.nbytes))
            data_index.extend(range(offset + len(head), offset + len(head) + spec.nbytes))
            offset += len(head) + spec.nbytes
        self.size = offset
        #: The constant bytes, checked in one match (the data: any bytes).
        self._constant = re.compile(b"".join(pattern), re.DOTALL)
        # The data as one slice when it is contiguous (one tensor), else gathered.
        first = data_index[0] if data_index else 0
        self._data_slice: Optional[Tuple[int, int]] = None
        self.data_index = np.array(data_index, dtype=np.intp)
        if data_index == list(range(first, first + len(data_index))):
            self._data_slice = (first, len(data_index))

    def decode_into(self, payload: bytes, target: np.ndarray) -> Optional[int]:
        """Copy the data of a canonical ``payload`` into ``target`` (uint8,
        all tensors' bytes in order) and return the observation; None when the
        payload is not in the canonical layout."""
        observation, pos = 0, 0
        if payload[:1] == b"\x08":  # field 1, varint: the observation
            shift, pos = 0, 1
            while True:
                if pos >= len(payload) or shift > 63:
                    return None
                byte = payload[pos]
                observation |= (byte & 0x7F) << shift
                pos += 1
                if byte < 0x80:
                    break
                shift += 7
            if observation == 0 or observation >= 1 << 64:
                return None  # not canonical (a zero observation is omitted)
        if len(payload) - pos != self.size or self._constant.fullmatch(payload, pos) is None:
            return None
        if self._data_slice is not None:
            start, count = self._data_slice
            target[:] = np.frombuffer(payload, np.uint8, count, pos + start)
        else:
            target[:] = np.frombuffer(payload, np.uint8, offset=pos)[self.data_index]
        return observation

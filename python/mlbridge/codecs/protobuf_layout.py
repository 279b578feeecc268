"""Fast path for canonical protobuf requests of a fixed schema.

For a fixed list of specs, the canonical ``TensorMessage`` encoding (what the
official serialiser and the C++ codec write) has the same bytes everywhere
except the observation varint and the tensors' data, and the data sits at
fixed offsets. A payload whose constant bytes all match is therefore decoded
by two numpy gathers instead of a parse; anything else (another field order,
unknown fields, a size mismatch) returns None and takes the general path, so
the result is always what the full parser would give.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from mlbridge.tensor_spec import TensorSpec


class CanonicalLayout:
    """Where the constant and the data bytes of a canonical request lie."""

    def __init__(self, pb2, specs: Sequence[TensorSpec]) -> None:
        pieces: List[bytes] = []
        data_index: List[int] = []
        const_index: List[int] = []
        offset = 0
        for spec in specs:
            tensor = pb2.TensorMessage()
            tensor.tensors.add(
                name=spec.name, dtype=spec.proto_dtype, shape=spec.shape, data=bytes(spec.nbytes)
            )
            piece = tensor.SerializeToString()
            data_start = offset + len(piece) - spec.nbytes  # field 4 is written last
            const_index.extend(range(offset, data_start))
            data_index.extend(range(data_start, offset + len(piece)))
            pieces.append(piece)
            offset += len(piece)
        template = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        self.size = offset
        self.const_index = np.array(const_index, dtype=np.intp)
        self.const_values = template[self.const_index].copy()
        self.data_index = np.array(data_index, dtype=np.intp)

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
        if len(payload) - pos != self.size:
            return None
        body = np.frombuffer(payload, dtype=np.uint8, offset=pos)
        if not np.array_equal(body[self.const_index], self.const_values):
            return None
        target[:] = body[self.data_index]
        return observation

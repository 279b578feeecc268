"""The bitstream format: raw tensor bytes concatenated in schema order."""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from mlbridge.codecs.base import Codec, ReplyTemplate, Tensors
from mlbridge.codecs.schema import arrays_for, check_payload_size
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError
from mlbridge.tensor_spec import TensorSpec, check_unique_names


class BitstreamCodec(Codec):
    """Names, types and shapes live in the schema; the payload is values only.

    The observation number is not carried: ``decode_request`` returns -1.
    """

    name = "bitstream"

    def encode_request(
        self, observation: int, specs: Sequence[TensorSpec], tensors: Tensors
    ) -> bytes:
        return b"".join(arr.tobytes() for arr in arrays_for(specs, tensors, "bitstream request"))

    def decode_request(
        self, payload: bytes, specs: Sequence[TensorSpec], into: Optional[TensorBuffer] = None
    ) -> Tuple[int, Dict[str, np.ndarray]]:
        if into is not None:
            check_payload_size(payload, self.max_bytes, "bitstream request")
            return -1, into.fill(payload, "bitstream request")
        return -1, self._decode(payload, specs, "bitstream request")

    def encode_reply(self, specs: Sequence[TensorSpec], tensors: Tensors) -> bytes:
        return self.reply_template(specs).encode(arrays_for(specs, tensors, "bitstream reply"))

    def reply_template(self, specs: Sequence[TensorSpec]) -> ReplyTemplate:
        """Nothing around the values: the raw bytes of each tensor in turn."""
        return ReplyTemplate(specs, [b""] * (len(specs) + 1), np.ndarray.tobytes)

    def decode_reply(self, payload: bytes, specs: Sequence[TensorSpec]) -> Dict[str, np.ndarray]:
        return self._decode(payload, specs, "bitstream reply")

    def _decode(
        self, payload: bytes, specs: Sequence[TensorSpec], what: str
    ) -> Dict[str, np.ndarray]:
        check_payload_size(payload, self.max_bytes, what)
        expected = sum(spec.nbytes for spec in specs)
        if len(payload) != expected:
            layout = ", ".join(f"{s.name}: {s.nbytes}" for s in specs[:8])
            more = ", ..." if len(specs) > 8 else ""
            raise CodecError(
                f"{what}: payload has {len(payload)} bytes, the schema "
                f"needs exactly {expected} ({layout}{more})"
            )
        result: Dict[str, np.ndarray] = {}
        offset = 0
        for spec in specs:
            end = offset + spec.nbytes
            if spec.nbytes:
                values = np.frombuffer(
                    payload, dtype=spec.dtype, count=spec.element_count, offset=offset
                )
                result[spec.name] = values.reshape(spec.shape).copy()
            else:
                result[spec.name] = np.zeros(spec.shape, dtype=spec.dtype)
            offset = end
        if len(result) != len(specs):
            check_unique_names(specs, what, CodecError)
        return result

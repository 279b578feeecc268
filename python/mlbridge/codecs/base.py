"""The Codec interface: one serialisation of requests and replies."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from mlbridge.codecs.schema import DEFAULT_MAX_BYTES
from mlbridge.errors import CodecError
from mlbridge.tensor_spec import TensorSpec

if TYPE_CHECKING:
    from mlbridge.codecs.tensor_buffer import TensorBuffer

#: Tensors to encode: name -> array (or anything TensorSpec.check accepts).
Tensors = Mapping[str, ArrayLike]


class Codec(abc.ABC):
    """Encodes and decodes messages (lists of named tensors) of one format.

    Decoders are bounded: a payload longer than ``max_bytes`` is rejected
    before it is parsed, and every tensor is checked against the declared
    specs (name, type, element count), raising :class:`CodecError`.
    """

    #: Format name as used in the extended-mode handshake.
    name: str = ""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.max_bytes = max_bytes

    @abc.abstractmethod
    def encode_request(
        self, observation: int, specs: Sequence[TensorSpec], tensors: Tensors
    ) -> bytes:
        """Encode the request of ``observation`` (features in ``specs``)."""

    @abc.abstractmethod
    def decode_request(
        self, payload: bytes, specs: Sequence[TensorSpec], into: Optional["TensorBuffer"] = None
    ) -> Tuple[int, Dict[str, np.ndarray]]:
        """Decode a request: (observation or -1 if not carried, tensors).

        With ``into`` (a TensorBuffer of ``specs``) the values land in its
        buffer and its read-only views are returned: nothing is allocated per
        tensor, and the views change with the next decode.
        """

    @abc.abstractmethod
    def encode_reply(self, specs: Sequence[TensorSpec], tensors: Tensors) -> bytes:
        """Encode a reply carrying the outputs in ``specs``."""

    @abc.abstractmethod
    def decode_reply(self, payload: bytes, specs: Sequence[TensorSpec]) -> Dict[str, np.ndarray]:
        """Decode a reply; exactly the declared outputs, else CodecError.

        A reply carrying an error message raises :class:`ModelError`.
        """

    def encode_error(self, message: str) -> bytes:
        """Encode a reply that reports a model-side failure."""
        raise CodecError(
            f"the {self.name} format cannot carry an error message; send an ERROR frame instead"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_bytes={self.max_bytes})"

"""The Codec interface: one serialisation of requests and replies."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from mlbridge.codecs.schema import DEFAULT_MAX_BYTES
from mlbridge.errors import CodecError
from mlbridge.policy import scalar_packer
from mlbridge.tensor_spec import TensorSpec

if TYPE_CHECKING:
    from mlbridge.codecs.tensor_buffer import TensorBuffer

#: Tensors to encode: name -> array (or anything TensorSpec.check accepts).
Tensors = Mapping[str, ArrayLike]
#: Encodes a policy's answer for a one-element output, or None (take the general path).
ScalarEncoder = Callable[[Any], Optional[bytes]]


class ReplyTemplate:
    """The replies of one format for fixed output specs, precomputed.

    A reply is constant bytes around each tensor's values: ``pieces[i]``
    comes before the values of ``specs[i]``, ``pieces[-1]`` ends the reply.
    ``value_bytes`` gives the wire bytes of one tensor's (checked) values;
    ``scalar_bytes``, when given, turns the raw little-endian bytes of a
    one-element tensor of ``spec`` into its wire bytes (None: the raw bytes
    are the wire bytes). ``size`` is the length of every reply when the values
    are sent raw (else None).
    """

    def __init__(
        self,
        specs: Sequence[TensorSpec],
        pieces: Sequence[bytes],
        value_bytes: Callable[[np.ndarray], bytes],
        scalar_bytes: Optional[Callable[[TensorSpec], Callable[[bytes], bytes]]] = None,
    ) -> None:
        if len(pieces) != len(specs) + 1:
            raise ValueError(
                f"{len(specs)} tensors need {len(specs) + 1} pieces, got {len(pieces)}"
            )
        self.specs = list(specs)
        self.pieces = list(pieces)
        self._value_bytes = value_bytes
        self._scalar_bytes = scalar_bytes
        raw = scalar_bytes is None
        self.size = sum(map(len, pieces)) + sum(s.nbytes for s in specs) if raw else None

    def encode(self, arrays: Sequence[np.ndarray]) -> bytes:
        """The reply carrying ``arrays``, one per spec in order, already checked
        (as :func:`mlbridge.codecs.schema.arrays_for` or
        :func:`mlbridge.policy.output_arrays` give them)."""
        parts: List[bytes] = [self.pieces[0]]
        for arr, piece in zip(arrays, self.pieces[1:]):
            parts.append(self._value_bytes(arr))
            parts.append(piece)
        return b"".join(parts)

    def scalar_encoder(self, prefix: bytes = b"") -> Optional[ScalarEncoder]:
        """For a single one-element output: ``prefix`` and the reply for a
        Python or numpy scalar answer, or None for any answer it cannot encode
        exactly as the general path would (:func:`mlbridge.policy.scalar_packer`).

        None when the outputs are not one ``int64_t``, ``int32_t``, ``float``
        or ``double`` element.
        """
        if len(self.specs) != 1:
            return None
        packer = scalar_packer(self.specs[0])
        if packer is None:
            return None
        pack = packer
        if self.specs[0].type_name == "float":
            # scalar_packer rounds an integer to float32 when it is exact as a
            # float64 (16777217 -> 16777216); the general path refuses any
            # integer that float32 cannot hold: let it decide.
            def pack(value: Any) -> Optional[bytes]:
                return None if isinstance(value, (int, np.integer)) else packer(value)

        head, tail = prefix + self.pieces[0], self.pieces[1]
        wire = None if self._scalar_bytes is None else self._scalar_bytes(self.specs[0])

        def encode(value: Any) -> Optional[bytes]:
            raw = pack(value)
            if raw is None:
                return None
            return head + (raw if wire is None else wire(raw)) + tail

        return encode


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

    def reply_template(self, specs: Sequence[TensorSpec]) -> Optional[ReplyTemplate]:
        """The replies for outputs ``specs``, precomputed: ``template.encode``
        gives what :meth:`encode_reply` gives, byte for byte, without checking
        the values again (a host makes it once per session). None when the
        format has none (the default, for codecs defined elsewhere)."""
        return None

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

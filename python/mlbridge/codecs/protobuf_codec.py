"""The protobuf format: ``mlbridge.v1.TensorMessage`` (proto/mlbridge/v1/tensor.proto).

Encoding and decoding use the official generated class, so the bytes are the
canonical serialisation. The generated module is imported on first use.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from mlbridge.codecs.base import Codec, ReplyTemplate, Tensors
from mlbridge.codecs.protobuf_layout import CanonicalLayout, tensor_heads
from mlbridge.codecs.schema import DEFAULT_MAX_BYTES, SchemaMatcher, arrays_for, check_payload_size
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, MlbridgeError, ModelError
from mlbridge.tensor_spec import PROTO_DTYPES, TensorSpec

_TYPE_NAMES = {value: name for name, value in PROTO_DTYPES.items()}


def load_tensor_pb2() -> ModuleType:
    """Import ``mlbridge.v1.tensor_pb2``, or explain how to generate it."""
    try:
        return importlib.import_module("mlbridge.v1.tensor_pb2")
    except Exception as err:  # ImportError, or a protobuf runtime version mismatch
        raise MlbridgeError(
            "the protobuf codec needs the generated module mlbridge.v1.tensor_pb2, "
            f"which cannot be imported ({err}); run 'python tools/gen_proto.py' "
            "from the mlbridge checkout (scripts/setup does it)"
        ) from None


class ProtobufCodec(Codec):
    """Serialises messages with the official protobuf ``TensorMessage`` class."""

    name = "protobuf"

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(max_bytes)
        self._pb2 = load_tensor_pb2()

    def encode_request(
        self, observation: int, specs: Sequence[TensorSpec], tensors: Tensors
    ) -> bytes:
        if (
            not isinstance(observation, (int, np.integer))
            or isinstance(observation, bool)
            or not 0 <= observation < 1 << 64
        ):
            raise CodecError(
                f"protobuf request: observation must be an integer in "
                f"[0, 2^64), got {observation!r}"
            )
        return self._encode(int(observation), specs, tensors, "protobuf request")

    def decode_request(
        self, payload: bytes, specs: Sequence[TensorSpec], into: Optional[TensorBuffer] = None
    ) -> Tuple[int, Dict[str, np.ndarray]]:
        what = "protobuf request"
        if into is not None:
            check_payload_size(payload, self.max_bytes, what)
            if self.name not in into.layouts:
                try:
                    into.layouts[self.name] = CanonicalLayout(self._pb2, into.specs)
                except UnicodeEncodeError:  # a lone surrogate in a name: no canonical form
                    into.layouts[self.name] = None
            layout = into.layouts[self.name]
            observation = None if layout is None else layout.decode_into(payload, into.data_bytes)
            if observation is not None:
                return observation, into.views
        message = self._parse(payload, what)
        matcher = into.matcher(what) if into is not None else SchemaMatcher(specs, what)
        return message.observation, self._tensors(message, matcher, what)

    def encode_reply(self, specs: Sequence[TensorSpec], tensors: Tensors) -> bytes:
        return self._encode(0, specs, tensors, "protobuf reply")

    def reply_template(self, specs: Sequence[TensorSpec]) -> Optional[ReplyTemplate]:
        """The official serialisation around the data: a reply (observation 0,
        not written) is each tensor's head then its raw bytes. None when a
        name cannot be encoded (a lone surrogate): :meth:`encode_reply` then
        raises per reply, as it always did."""
        try:
            heads = tensor_heads(self._pb2, specs)
        except UnicodeEncodeError:
            return None
        return ReplyTemplate(specs, heads + [b""], np.ndarray.tobytes)

    def decode_reply(self, payload: bytes, specs: Sequence[TensorSpec]) -> Dict[str, np.ndarray]:
        message = self._parse(payload, "protobuf reply")
        if message.error:
            raise ModelError(message.error)
        return self._tensors(message, SchemaMatcher(specs, "protobuf reply"), "protobuf reply")

    def encode_error(self, message: str) -> bytes:
        """A TensorMessage with only ``error`` set."""
        return self._pb2.TensorMessage(error=str(message) or "unknown error").SerializeToString()

    def _encode(
        self, observation: int, specs: Sequence[TensorSpec], tensors: Tensors, what: str
    ) -> bytes:
        message = self._pb2.TensorMessage(observation=observation)
        for spec, arr in zip(specs, arrays_for(specs, tensors, what)):
            message.tensors.add(
                name=spec.name, dtype=spec.proto_dtype, shape=spec.shape, data=arr.tobytes()
            )
        return message.SerializeToString()

    def _parse(self, payload: bytes, what: str):  # -> tensor_pb2.TensorMessage
        check_payload_size(payload, self.max_bytes, what)
        message = self._pb2.TensorMessage()
        try:
            message.ParseFromString(bytes(payload))
        except Exception as err:  # google.protobuf.message.DecodeError and kin
            raise CodecError(f"{what}: malformed protobuf TensorMessage: {err}") from None
        return message

    @staticmethod
    def _tensors(message, matcher: SchemaMatcher, what: str) -> Dict[str, np.ndarray]:
        for tensor in message.tensors:
            type_name = _TYPE_NAMES.get(tensor.dtype, f"<unknown dtype {tensor.dtype}>")
            spec = matcher.spec_for(tensor.name, type_name, list(tensor.shape))
            matcher.add_bytes(spec, tensor.data)
        return matcher.finish()

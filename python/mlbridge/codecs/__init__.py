"""Serialisations of mlbridge messages: bitstream, json and protobuf.

>>> codec = get_codec("json")
>>> payload = codec.encode_request(0, specs, {"x": np.array([1.5], np.float32)})
>>> observation, tensors = codec.decode_request(payload, specs)
"""

from __future__ import annotations

from typing import Dict, Type

from mlbridge.codecs.base import Codec
from mlbridge.codecs.bitstream import BitstreamCodec
from mlbridge.codecs.json_codec import JsonCodec
from mlbridge.codecs.protobuf_codec import ProtobufCodec
from mlbridge.codecs.schema import DEFAULT_MAX_BYTES
from mlbridge.errors import CodecError

_CODECS: Dict[str, Type[Codec]] = {
    "bitstream": BitstreamCodec,
    "json": JsonCodec,
    "protobuf": ProtobufCodec,
}

#: The format names, as used in the extended-mode handshake.
FORMATS = tuple(_CODECS)


def get_codec(name: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Codec:
    """A codec for format ``name`` ("bitstream", "json" or "protobuf").

    ``max_bytes`` bounds every payload the codec decodes.
    """
    try:
        cls = _CODECS[name]
    except KeyError:
        raise CodecError(f"unknown format '{name}'; expected one of {', '.join(FORMATS)}") from None
    return cls(max_bytes=max_bytes)


__all__ = [
    "BitstreamCodec",
    "Codec",
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "JsonCodec",
    "ProtobufCodec",
    "get_codec",
]

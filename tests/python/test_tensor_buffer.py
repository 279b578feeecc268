"""Decoding requests in place (TensorBuffer) gives what the plain decoders give."""

from __future__ import annotations

import pytest
from tensor_cases import ALL_DTYPE_SPECS, random_values

from mlbridge.codecs import get_codec
from mlbridge.codecs.protobuf_codec import load_tensor_pb2
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError

SPECS = ALL_DTYPE_SPECS


def _values(seed: int):
    return random_values(SPECS, seed)


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_in_place_decoding_matches_plain_decoding(fmt):
    codec, buffer = get_codec(fmt), TensorBuffer(SPECS)
    for seed, observation in enumerate([0, 1, 127, 128, 2**40]):
        payload = codec.encode_request(observation, SPECS, _values(seed))
        ref_obs, ref = codec.decode_request(payload, SPECS)
        obs, got = codec.decode_request(payload, SPECS, into=buffer)
        assert obs == ref_obs
        assert list(got) == list(ref)
        for name in ref:
            assert got[name].shape == ref[name].shape
            assert got[name].tobytes() == ref[name].tobytes()
            assert not got[name].flags.writeable


def test_protobuf_non_canonical_payloads_take_the_general_path():
    pb2, codec, buffer = load_tensor_pb2(), get_codec("protobuf"), TensorBuffer(SPECS)
    values = _values(3)
    message = pb2.TensorMessage(observation=9)
    for spec in reversed(SPECS):  # another tensor order: still valid
        message.tensors.add(
            name=spec.name,
            dtype=spec.proto_dtype,
            shape=spec.shape,
            data=values[spec.name].tobytes(),
        )
    obs, got = codec.decode_request(message.SerializeToString(), SPECS, into=buffer)
    assert obs == 9
    assert all(got[s.name].tobytes() == values[s.name].tobytes() for s in SPECS)
    # A wrong data size is caught by the general path, naming the tensor.
    message.tensors[0].data = b"\x00"
    with pytest.raises(CodecError, match=SPECS[-1].name):
        codec.decode_request(message.SerializeToString(), SPECS, into=buffer)
    # Garbage of the canonical length is not mistaken for a canonical message.
    canonical = codec.encode_request(0, SPECS, values)
    with pytest.raises(CodecError):
        codec.decode_request(b"\xff" * len(canonical), SPECS, into=buffer)

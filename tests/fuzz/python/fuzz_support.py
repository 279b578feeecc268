"""Shared set-up of the atheris targets in this directory (docs/fuzzing.md).

Importing this module imports the mlbridge modules under test with atheris'
coverage instrumentation (so import it before anything else from mlbridge).
The package's contract is that its decoders raise only
:class:`mlbridge.errors.MlbridgeError` on malformed bytes: the targets catch
that and nothing else, so any other exception is a finding (atheris reports
the traceback and writes the input as a crash file).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, List, Tuple

import atheris

with atheris.instrument_imports(include=["mlbridge"]):
    import mlbridge.channel
    import mlbridge.codecs
    import mlbridge.framing
    import mlbridge.pipe_host
    import mlbridge.shared_memory
    import mlbridge.training_log
    from mlbridge.codecs.tensor_buffer import TensorBuffer
    from mlbridge.errors import MlbridgeError
    from mlbridge.tensor_spec import TensorSpec

#: The modules under test, imported instrumented before any target imports them.
INSTRUMENTED = (
    mlbridge.channel,
    mlbridge.codecs,
    mlbridge.framing,
    mlbridge.pipe_host,
    mlbridge.shared_memory,
    mlbridge.training_log,
)

_ROOT = Path(__file__).resolve().parents[3]
GOLDEN_DIR = Path(os.environ.get("MLBRIDGE_GOLDEN_DIR", _ROOT / "tests" / "golden"))

#: More tensors than a 1024-bit "seen" mask, as in the C++ targets.
_MANY_TENSORS = 1100

Schema = Tuple[List[TensorSpec], TensorBuffer]


def _load_schemas() -> List[Schema]:
    cases = json.loads((GOLDEN_DIR / "cases.json").read_text())
    spec_lists = [
        [TensorSpec(t["name"], t["type"], tuple(t["shape"])) for t in c["tensors"]] for c in cases
    ]
    spec_lists.append([TensorSpec(f"t{i}", "int8_t", ()) for i in range(_MANY_TENSORS)])
    return [(specs, TensorBuffer(specs)) for specs in spec_lists]


#: The schema of every golden case (its tensors), then a schema of many
#: tensors; each with a TensorBuffer for decode_request(into=...).
SCHEMAS: List[Schema] = _load_schemas()


def schemas_for(payload: bytes, self_describing: bool) -> List[Schema]:
    """The schemas to decode ``payload`` against: the first one, and every
    other one that ``payload`` may match: whose first tensor name occurs in
    it (json, protobuf), or whose byte size it has (bitstream). Against any
    other schema a decode fails at the first tensor or the size check, as it
    does against the first; skipping those keeps a run to a decode or two.
    """
    if self_describing:
        return [SCHEMAS[0]] + [s for s in SCHEMAS[1:] if s[0][0].name.encode() in payload]
    return [SCHEMAS[0]] + [s for s in SCHEMAS[1:] if s[1].nbytes == len(payload)]


def _same(a: dict, b: dict, specs: List[TensorSpec], what: str) -> None:
    """Raise unless both decodes carry the same bytes for every tensor."""
    if any(a[s.name].tobytes() != b[s.name].tobytes() for s in specs):
        raise AssertionError(f"a {what} changed in a round trip")


def codec_target(name: str, max_bytes: int = 1 << 20) -> Callable[[bytes], None]:
    """The test function of the codec ``name``: decode the input as a request
    (with and without a TensorBuffer) and as a reply against the schemas of
    :func:`schemas_for`; a decoded message must survive a re-encode and
    decode unchanged."""
    codec = mlbridge.codecs.get_codec(name, max_bytes=max_bytes)
    self_describing = name != "bitstream"

    def test_one_input(data: bytes) -> None:
        for specs, buffer in schemas_for(data, self_describing):
            try:
                observation, tensors = codec.decode_request(data, specs)
            except MlbridgeError:
                pass
            else:
                payload = codec.encode_request(max(observation, 0), specs, tensors)
                _same(tensors, codec.decode_request(payload, specs)[1], specs, "request")
            try:
                codec.decode_request(data, specs, into=buffer)
            except MlbridgeError:
                pass
            try:
                tensors = codec.decode_reply(data, specs)
            except MlbridgeError:
                continue
            _same(
                tensors,
                codec.decode_reply(codec.encode_reply(specs, tensors), specs),
                specs,
                "reply",
            )

    return test_one_input


def main(test_one_input: Callable[[bytes], None]) -> None:
    """Run libFuzzer's driver on ``test_one_input`` with the command line.

    libFuzzer's -merge=1 runs its argv[0] again: $MLBRIDGE_FUZZ_ARGV0, when
    set, is an executable that does (the script itself is not one).
    """
    argv = [os.environ.get("MLBRIDGE_FUZZ_ARGV0") or sys.argv[0], *sys.argv[1:]]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()

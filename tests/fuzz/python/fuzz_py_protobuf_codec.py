"""atheris target: ProtobufCodec.decode_request / decode_reply against the golden
schemas (mlbridge.codecs.protobuf_codec, its canonical-layout fast path).

The test function and its round-trip oracle: fuzz_support.codec_target.
"""

from __future__ import annotations

import fuzz_support  # first: imports mlbridge instrumented

test_one_input = fuzz_support.codec_target("protobuf")

if __name__ == "__main__":
    fuzz_support.main(test_one_input)

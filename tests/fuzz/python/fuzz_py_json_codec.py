"""atheris target: JsonCodec.decode_request / decode_reply against the golden schemas
(mlbridge.codecs.json_codec and mlbridge.jsontext).

The test function and its round-trip oracle: fuzz_support.codec_target.
"""

from __future__ import annotations

import fuzz_support  # first: imports mlbridge instrumented

test_one_input = fuzz_support.codec_target("json")

if __name__ == "__main__":
    fuzz_support.main(test_one_input)

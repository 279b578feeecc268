"""atheris target: mlbridge.framing.read_frame over a stream, frame after frame.

Reads until the end of the stream or the first FrameError, as the pipe host
does; with a small ``max_bytes`` so that the length check is reached.
"""

from __future__ import annotations

import io

import fuzz_support  # first: imports mlbridge instrumented

from mlbridge.errors import EndOfStream, MlbridgeError
from mlbridge.framing import read_frame

MAX_BYTES = 4096


def test_one_input(data: bytes) -> None:
    """Read every frame of ``data``; each must respect the length limit."""
    stream = io.BytesIO(data)
    try:
        while True:
            kind, payload = read_frame(stream, MAX_BYTES)
            if len(payload) > MAX_BYTES:
                raise AssertionError(
                    f"{kind.name} frame of {len(payload)} bytes passed a limit of {MAX_BYTES}"
                )
    except EndOfStream:
        pass
    except MlbridgeError:
        pass


if __name__ == "__main__":
    fuzz_support.main(test_one_input)

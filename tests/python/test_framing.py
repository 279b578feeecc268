"""Extended-mode frames over byte streams and real pipes."""

from __future__ import annotations

import io
import os
import threading

import pytest

from mlbridge.errors import EndOfStream, FrameError
from mlbridge.framing import (
    CONTEXT,
    ERROR,
    OBSERVATION,
    RESULT,
    FrameKind,
    encode_frame,
    read_frame,
    write_frame,
)


class Trickle(io.RawIOBase):
    """A raw stream that returns at most one byte per read (short reads)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self._data.read(min(1, len(buffer)))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def test_header_layout():
    assert encode_frame(RESULT, b"abc") == b"\x03\x00\x00\x00\x03\x00\x00\x00abc"
    assert encode_frame(2, b"") == b"\x00\x00\x00\x00\x02\x00\x00\x00"


def test_round_trip_and_clean_end():
    frames = [(CONTEXT, b"main"), (OBSERVATION, b"\n" * 100), (RESULT, b""), (ERROR, b"boom")]
    out = io.BytesIO()
    for kind, payload in frames:
        write_frame(out, kind, payload)
    stream = io.BytesIO(out.getvalue())
    assert [read_frame(stream) for _ in frames] == frames
    with pytest.raises(EndOfStream):
        read_frame(stream)


def test_short_reads_are_looped():
    data = encode_frame(OBSERVATION, bytes(range(256)) * 3) + encode_frame(CONTEXT, b"f")
    stream = Trickle(data)
    assert read_frame(stream) == (FrameKind.OBSERVATION, bytes(range(256)) * 3)
    assert read_frame(stream) == (FrameKind.CONTEXT, b"f")
    with pytest.raises(EndOfStream):
        read_frame(stream)


def test_over_a_real_pipe_unbuffered():
    read_fd, write_fd = os.pipe()
    payload = os.urandom(3 << 20)  # bigger than the pipe buffer: many partial reads
    with open(read_fd, "rb", buffering=0) as reader, open(write_fd, "wb", buffering=0) as writer:
        thread = threading.Thread(
            target=lambda: (
                write_frame(writer, OBSERVATION, payload),
                write_frame(writer, ERROR, b"x"),
            )
        )
        thread.start()
        assert read_frame(reader) == (OBSERVATION, payload)
        assert read_frame(reader) == (ERROR, b"x")
        thread.join()


def test_unknown_kind_cannot_be_written():
    with pytest.raises(FrameError, match="unknown frame kind 7"):
        write_frame(io.BytesIO(), 7, b"")

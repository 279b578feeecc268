"""Extended-mode frames: an 8-byte header (u32 LE length, u32 LE kind) + payload.

:func:`read_frame` and :func:`write_frame` work on any binary stream. The pipe
host reads with :meth:`mlbridge.channel.FdReader.read_frame` (in place, the
same checks and errors: :func:`check_header`, :func:`truncated`) and writes
each reply as one ``write`` of :func:`frame_bytes`.
"""

from __future__ import annotations

import enum
import struct
from typing import Optional, Protocol, Tuple

from mlbridge.errors import EndOfStream, FrameError
from mlbridge.limits import DEFAULT_MAX_BYTES

#: The frame header: payload length, then kind (both u32 little-endian).
HEADER = struct.Struct("<II")
HEADER_SIZE = HEADER.size
_MAX_CHUNK = 1 << 20  # read big payloads in chunks: never trust the length field


class FrameReader(Protocol):
    """What :func:`read_frame` reads from: a binary file (``BinaryIO``) or a
    :class:`mlbridge.channel.FdReader`. ``read`` may give None (a non-blocking
    raw stream with nothing to read): that raises FrameError."""

    def read(self, size: int, /) -> Optional[bytes]: ...


class FrameWriter(Protocol):
    """What :func:`write_frame` writes to: a binary file (``BinaryIO``) or a
    :class:`mlbridge.channel.FdWriter`. ``write`` may write only part of the
    data (the rest is written next), or give None (a non-blocking raw stream
    that is full): that raises FrameError."""

    def write(self, data: memoryview, /) -> Optional[int]: ...

    def flush(self) -> None: ...


class FrameKind(enum.IntEnum):
    """Kinds of extended-mode frames (docs/protocol.md)."""

    CONTEXT = 1
    OBSERVATION = 2
    RESULT = 3
    ERROR = 4


CONTEXT, OBSERVATION, RESULT, ERROR = (
    FrameKind.CONTEXT,
    FrameKind.OBSERVATION,
    FrameKind.RESULT,
    FrameKind.ERROR,
)


_KIND_NAMES = {int(kind): kind.name for kind in FrameKind}


def check_header(length: int, kind: int, max_bytes: int) -> FrameKind:
    """The kind of a frame header (length, kind) just read, or FrameError for
    an unknown kind or a length above ``max_bytes`` (before any payload is read)."""
    try:
        checked = FrameKind(kind)
    except ValueError:
        raise FrameError(f"unknown frame kind {kind} (length field {length})") from None
    if length > max_bytes:
        raise FrameError(
            f"{checked.name} frame claims {length} bytes, more than the maximum of {max_bytes}"
        )
    return checked


def truncated(what: str, got: int, size: int) -> FrameError:
    """The error for a stream that ended after ``got`` of the ``size`` bytes of ``what``."""
    return FrameError(f"truncated {what}: stream ended after {got} of {size} bytes")


def payload_what(kind: int) -> str:
    """How errors name the payload of a frame of a known ``kind``."""
    return f"{_KIND_NAMES[kind]} frame payload"


def encode_frame(kind: int, payload: bytes) -> bytes:
    """The bytes of one frame."""
    try:
        kind = FrameKind(kind)
    except ValueError:
        raise FrameError(f"unknown frame kind {kind!r}") from None
    return frame_bytes(kind, payload)


def frame_bytes(kind: FrameKind, payload: bytes) -> bytes:
    """:func:`encode_frame` for a kind already known to be valid (no lookup)."""
    if len(payload) > 0xFFFFFFFF:
        raise FrameError(
            f"{kind.name} frame payload of {len(payload)} bytes does not fit a 32-bit length"
        )
    return HEADER.pack(len(payload), kind) + bytes(payload)


def write_frame(f: FrameWriter, kind: int, payload: bytes) -> None:
    """Write one frame to the binary stream ``f`` and flush it."""
    data = encode_frame(kind, payload)
    view = memoryview(data)
    while view:
        written = f.write(view)
        if written is None:  # non-blocking raw stream with nothing written
            raise FrameError("stream would block while writing a frame")
        view = view[written:]
    f.flush()


def _read_exactly(f: FrameReader, size: int, what: str, *, at_boundary: bool = False) -> bytes:
    """Read exactly ``size`` bytes, looping over short reads."""
    chunks = []
    remaining = size
    while remaining:
        chunk = f.read(min(remaining, _MAX_CHUNK))
        if chunk is None:
            raise FrameError(f"stream would block while reading {what}")
        if not chunk:
            got = size - remaining
            if at_boundary and got == 0:
                raise EndOfStream("end of stream (the peer closed it)")
            raise truncated(what, got, size)
        chunks.append(chunk)
        remaining -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_frame(f: FrameReader, max_bytes: int = DEFAULT_MAX_BYTES) -> Tuple[FrameKind, bytes]:
    """Read one frame from the binary stream ``f``: (kind, payload).

    Raises :class:`EndOfStream` when the stream ends cleanly before a frame,
    and :class:`FrameError` on a truncated frame, an unknown kind or a length
    above ``max_bytes`` (checked before reading the payload).
    """
    header = _read_exactly(f, HEADER_SIZE, "frame header", at_boundary=True)
    length, raw_kind = HEADER.unpack(header)
    kind = check_header(length, raw_kind, max_bytes)
    payload = _read_exactly(f, length, payload_what(kind)) if length else b""
    return kind, payload

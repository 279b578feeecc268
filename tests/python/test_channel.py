"""The pipe channel: creation, protocol open order, timeouts, EOF."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from mlbridge.channel import (
    ChannelTimeout,
    FdReader,
    PeerGone,
    create_channel,
    make_fifos,
    open_host_ends,
    open_writer,
)


def test_create_channel_is_private_and_removed(tmp_path):
    with create_channel(str(tmp_path)) as channel:
        directory = os.path.dirname(channel.base)
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        for path in (channel.in_path, channel.out_path):
            mode = os.stat(path).st_mode
            assert stat.S_ISFIFO(mode) and stat.S_IMODE(mode) == 0o600
    assert not os.path.exists(directory)


def test_make_fifos_at_given_base(tmp_path):
    base = str(tmp_path / "ch")
    channel = make_fifos(base)
    assert os.path.exists(base + ".in") and os.path.exists(base + ".out")
    channel.close()
    assert not os.path.exists(base + ".in") and not os.path.exists(base + ".out")


def _compiler_side(base, lines, result):
    """Open like LLVM (BASE.in read, then BASE.out write), write, read a reply."""
    with open(base + ".in", "rb", buffering=0) as inp, open(base + ".out", "wb") as out:
        for line in lines:
            out.write(line)
        out.flush()
        result.append(inp.read(4))


def test_open_order_and_exact_reads():
    with create_channel() as channel:
        payload = b"\n\n\x0a" + bytes(range(256))
        result = []
        t = threading.Thread(
            target=_compiler_side, args=(channel.base, [b"hello\n", payload], result)
        )
        t.start()
        with open_host_ends(channel.base, open_timeout=5, io_timeout=5) as ends:
            assert ends.reader.readline() == b"hello\n"
            assert ends.reader.read(len(payload)) == payload
            ends.writer.write(b"ok!!")
            t.join(5)
            assert ends.reader.read(1) == b""  # EOF after the writer closed
            assert ends.reader.at_eof()
        assert result == [b"ok!!"]


def test_open_times_out_when_nobody_opens():
    with create_channel() as channel:
        with pytest.raises(ChannelTimeout):
            open_writer(channel.in_path, timeout=0.2)


def test_open_gives_up_when_the_watched_peer_is_gone():
    with create_channel() as channel:
        deadline = time.monotonic() + 0.2
        with pytest.raises(PeerGone):
            open_host_ends(channel.base, watch=lambda: time.monotonic() < deadline)


def test_read_timeout_and_peer_gone():
    r, w = os.pipe()
    os.set_blocking(r, False)
    try:
        with pytest.raises(ChannelTimeout):
            FdReader(r, timeout=0.1).readline()
        with pytest.raises(PeerGone):
            FdReader(r, watch=lambda: False, watch_interval=0.05).read(1)
        os.write(w, b"abc")
        reader = FdReader(r, timeout=1)
        assert reader.read(3) == b"abc"
    finally:
        os.close(r)
        os.close(w)

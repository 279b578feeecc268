"""The two-FIFO pipe channel of docs/protocol.md, opened without blocking forever.

A channel is a pair of FIFOs ``BASE.in`` (model side -> compiler) and
``BASE.out`` (compiler -> model side) inside a private (0700) directory. The
compiler opens ``BASE.in`` for reading first, then ``BASE.out`` for writing, so
the model side opens ``BASE.in`` for writing, then ``BASE.out`` for reading.

A compiler may never open the FIFOs at all (``llc -O0`` never asks its register
allocation advisor anything), so :func:`open_host_end` never blocks in
``open()``: it retries a non-blocking open until the compiler's end appears,
the deadline passes or a watched child process has exited. Reads wait in
``poll()`` with a timeout and report end of file.

Linux semantics are relied upon: a FIFO opened for reading before any writer
connected does not report end of file until a writer has come and gone.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import stat
import tempfile
import time
from typing import Callable, Optional, Tuple, Union

from mlbridge.errors import EndOfStream, MlbridgeError
from mlbridge.framing import HEADER, HEADER_SIZE, check_header, payload_what, truncated

#: A callable returning True while the peer may still open / write (e.g. the
#: compiler process is alive). ``None`` means "always alive".
Watch = Optional[Callable[[], bool]]

_READ_CHUNK = 1 << 16


class ChannelError(MlbridgeError):
    """A transport problem on the pipe channel."""


class ChannelTimeout(ChannelError):
    """The peer did not open, write or read in time."""


class PeerGone(ChannelError):
    """The peer will never open the channel (the watched process exited)."""


class Channel:
    """Two FIFOs ``BASE.in``/``BASE.out`` in a private directory.

    Use as a context manager; :meth:`close` removes the FIFOs and, when the
    channel made it, the directory.
    """

    def __init__(self, base: str, owned_dir: Optional[str] = None) -> None:
        self.base = base
        self._owned_dir = owned_dir

    @property
    def in_path(self) -> str:
        """The FIFO the model side writes (the compiler reads)."""
        return self.base + ".in"

    @property
    def out_path(self) -> str:
        """The FIFO the compiler writes (the model side reads)."""
        return self.base + ".out"

    def close(self) -> None:
        """Remove the FIFOs (and the private directory if this channel made it)."""
        for path in (self.in_path, self.out_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None

    def __enter__(self) -> "Channel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Channel({self.base!r})"


def make_fifos(base: str) -> Channel:
    """Create ``BASE.in`` and ``BASE.out`` (mode 0600) at an existing location."""
    made = []
    try:
        for suffix in (".in", ".out"):
            os.mkfifo(base + suffix, 0o600)
            made.append(base + suffix)
            os.chmod(base + suffix, 0o600)  # mkfifo honours the umask
    except OSError as err:
        for path in made:
            os.unlink(path)
        raise ChannelError(f"cannot create FIFO {base}{suffix}: {err.strerror}") from err
    return Channel(base)


def create_channel(directory: Optional[str] = None, name: str = "channel") -> Channel:
    """Make a private (0700) directory holding the FIFOs ``NAME.in``/``NAME.out``.

    ``directory`` is where the private directory is created (default: the
    system temporary directory). The returned channel removes everything on
    :meth:`Channel.close`.
    """
    private = tempfile.mkdtemp(prefix="mlbridge-", dir=directory)
    os.chmod(private, 0o700)
    try:
        channel = make_fifos(os.path.join(private, name))
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    channel._owned_dir = private
    return channel


def _check_fifo(path: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ChannelError(f"{path} does not exist") from None
    if not stat.S_ISFIFO(mode):
        raise ChannelError(f"{path} is not a FIFO")


def open_writer(path: str, timeout: Optional[float] = None, watch: Watch = None) -> int:
    """Open the FIFO ``path`` for writing once its reader has opened it.

    Retries a non-blocking open (which fails with ENXIO while no reader is
    there) with a short back-off. Raises :class:`ChannelTimeout` after
    ``timeout`` seconds (None: no limit) and :class:`PeerGone` as soon as
    ``watch()`` returns False. Returns a non-blocking file descriptor.
    """
    _check_fifo(path)
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0002
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as err:
            if err.errno != errno.ENXIO:
                raise ChannelError(f"cannot open {path}: {err.strerror}") from err
        if watch is not None and not watch():
            raise PeerGone(f"the compiler exited without opening {path}")
        if deadline is not None and time.monotonic() >= deadline:
            raise ChannelTimeout(f"the compiler did not open {path} within {timeout:g} s")
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def open_reader(path: str) -> int:
    """Open the FIFO ``path`` for reading without waiting for a writer."""
    _check_fifo(path)
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise ChannelError(f"cannot open {path}: {err.strerror}") from err


class FdReader:
    """Buffered reads from a non-blocking fd, each wait bounded by ``timeout``.

    ``watch`` is consulted every ``watch_interval`` seconds while waiting, so a
    dead peer is noticed even if something else keeps the FIFO open.

    With neither a timeout nor a watch, once the compiler has sent its first
    bytes the fd is switched to blocking reads (no poll per read): the
    writer is then known to be connected, so a 0-byte read is a real end of
    file. This halves the system calls on the per-decision path.
    """

    def __init__(
        self,
        fd: int,
        timeout: Optional[float] = None,
        watch: Watch = None,
        watch_interval: float = 0.5,
    ) -> None:
        self.fd = fd
        self.timeout = timeout
        self.watch = watch
        self._interval_ms = int(watch_interval * 1000)
        self._buf = bytearray(_READ_CHUNK)
        self._view = memoryview(self._buf)
        self._whole = [self._view]  # readv() target list for an empty buffer
        self._start = 0
        self._end = 0
        self._record = 0  # where the record read_record consumed last starts
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self._blocking = False
        self.eof = False

    def _make_room(self) -> None:
        """Ensure free space after ``_end``: compact, or double the buffer.

        A bigger buffer is a new one: views of the old one handed out by
        :meth:`read_frame` may still exist (resizing would raise BufferError).
        """
        if self._start == self._end:
            self._start = self._end = 0
            return
        if self._end < len(self._buf):
            return
        pending = self._end - self._start
        if self._start:
            self._view[:pending] = self._view[self._start : self._end]
        else:
            bigger = bytearray(2 * len(self._buf))
            bigger[:pending] = self._view[:pending]
            self._buf, self._view = bigger, memoryview(bigger)
            self._whole = [self._view]
        self._start, self._end = 0, pending

    def _read_some(self) -> bool:
        """One read() into the buffer; False on end of file or no data yet."""
        try:
            got = os.readv(self.fd, [self._view[self._end :]])
        except BlockingIOError:
            return False
        if not got:
            self.eof = True
            return False
        self._end += got
        if not self._blocking and self.timeout is None and self.watch is None:
            os.set_blocking(self.fd, True)
            self._blocking = True
        return True

    def _fill(self) -> bool:
        """Read more bytes into the buffer; False on end of file.

        Until the first bytes arrive it waits in poll() before reading: before
        the writer connects, read() returning 0 does not mean end of file
        (poll, on Linux, reports a hang-up only after a writer came and went).
        """
        if self.eof:
            return False
        self._make_room()
        if self._blocking:
            return self._read_some()
        deadline = None
        while True:
            if deadline is None and self.timeout is not None:
                deadline = time.monotonic() + self.timeout
            wait = self._interval_ms if self.watch is not None else -1
            if deadline is not None:
                left = max(0, int((deadline - time.monotonic()) * 1000) + 1)
                wait = left if wait < 0 else min(wait, left)
            if self._poll.poll(wait):
                if self._read_some():
                    return True
                if self.eof:
                    return False
                continue
            if self.watch is not None and not self.watch():
                raise PeerGone("the compiler exited while the model side waited for data")
            if deadline is not None and time.monotonic() >= deadline:
                raise ChannelTimeout(f"no data from the compiler within {self.timeout:g} s")

    def wait_and_discard(self) -> bool:
        """Wait (bounded like every read) for at least one byte, then drop
        every byte buffered; False at end of file. For the shm protocol's
        rings, whose count does not matter."""
        self._start = self._end = 0
        if not self._fill():
            return False
        self._start = self._end = 0
        return True

    def at_eof(self) -> bool:
        """True when no byte is buffered and the writer has closed."""
        return self._start >= self._end and not self._fill()

    def readline(self, limit: int = 1 << 20) -> bytes:
        """One line including its ``\\n``; the partial rest at end of file."""
        while True:
            end = self._buf.find(b"\n", self._start, self._end)
            if end >= 0:
                line = bytes(self._view[self._start : end + 1])
                self._start = end + 1
                return line
            if self._end - self._start > limit:
                raise ChannelError(f"line longer than {limit} bytes from the compiler")
            if not self._fill():
                line = bytes(self._view[self._start : self._end])
                self._start = self._end
                return line

    def read_record(self, prefix: bytes, target: memoryview) -> bool:
        """Fast path for LLVM's observation record: a line ``prefix ... }\\n``
        followed by exactly ``len(target)`` bytes, the last one ``\\n``.

        When the buffered data (after at most one read) holds such a record,
        copies its bytes after the line into ``target`` and returns True;
        otherwise (a partial record, any other line, end of file) consumes
        nothing and returns False: use :meth:`readline` and :meth:`readinto`,
        which see the same bytes and report what is wrong.
        """
        start, end = self._start, self._end
        if start == end:
            if not self._blocking or self.eof:
                if not self._fill():
                    return False
                start, end = self._start, self._end
            else:  # the steady state: one read() brings the record
                end = os.readv(self.fd, self._whole)
                if not end:
                    self.eof = True
                    return False
                start, self._start, self._end = 0, 0, end
        buf = self._buf
        newline = buf.find(b"\n", start, end)
        stop = newline + 1 + len(target)
        if (
            newline < 0
            or stop > end
            or buf[stop - 1] != 0x0A
            or buf[newline - 1] != 0x7D  # "}"
            or not buf.startswith(prefix, start)
        ):
            return False
        target[:] = self._view[newline + 1 : stop]
        self._start, self._record = stop, start
        return True

    def last_record_line(self) -> bytes:
        """The line of the record :meth:`read_record` consumed last (for an
        error message); valid until the next read."""
        newline = self._buf.find(b"\n", self._record)
        return bytes(self._view[self._record : newline + 1])

    def read_frame(self, max_bytes: int) -> Tuple[int, memoryview]:
        """One extended-mode frame: (kind, payload), the payload a view of the
        read buffer, valid until the next read.

        Behaves like :func:`mlbridge.framing.read_frame` (same errors, and the
        length is checked before any payload is read) but copies nothing: in
        the steady state one ``read()`` brings the whole frame, the header is
        unpacked in place and the kind stays an int.
        """
        if self._start == self._end and self._blocking and not self.eof:
            got = os.readv(self.fd, self._whole)  # the steady state: one read()
            if not got:
                self.eof = True
                raise EndOfStream("end of stream (the peer closed it)")
            self._start, self._end = 0, got
        start = self._start
        if self._end - start >= HEADER_SIZE:
            length, kind = HEADER.unpack_from(self._buf, start)
            end = start + HEADER_SIZE + length
            if end <= self._end and length <= max_bytes and 1 <= kind <= 4:
                self._start = end
                return kind, self._view[start + HEADER_SIZE : end]
        return self._read_frame_slowly(max_bytes)

    def _read_frame_slowly(self, max_bytes: int) -> Tuple[int, memoryview]:
        """:meth:`read_frame` when the frame is not all buffered (or is bad)."""
        while self._end - self._start < HEADER_SIZE:
            if not self._fill():
                got = self._end - self._start
                if not got:
                    raise EndOfStream("end of stream (the peer closed it)")
                self._start = self._end
                raise truncated("frame header", got, HEADER_SIZE)
        length, kind = HEADER.unpack_from(self._buf, self._start)
        check_header(length, kind, max_bytes)
        self._start += HEADER_SIZE
        while self._end - self._start < length:
            if not self._fill():
                got = self._end - self._start
                self._start = self._end
                raise truncated(payload_what(kind), got, length)
        start, self._start = self._start, self._start + length
        return kind, self._view[start : self._start]

    def read(self, n: int) -> bytes:
        """Exactly ``n`` bytes, or fewer only at end of file."""
        while self._end - self._start < n:
            if not self._fill():
                n = self._end - self._start
                break
        data = bytes(self._view[self._start : self._start + n])
        self._start += n
        return data

    def readinto(self, target: memoryview) -> int:
        """Fill ``target`` completely (fewer bytes only at end of file)."""
        n = len(target)
        while self._end - self._start < n:
            if not self._fill():
                n = self._end - self._start
                break
        target[:n] = self._view[self._start : self._start + n]
        self._start += n
        return n


class FdWriter:
    """Writes all bytes to a non-blocking fd, each wait bounded by ``timeout``."""

    def __init__(self, fd: int, timeout: Optional[float] = None) -> None:
        self.fd = fd
        self.timeout = timeout
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)

    def write(self, data: Union[bytes, bytearray, memoryview]) -> int:
        """Write every byte of ``data`` (returns its length); raise on timeout
        or a closed reader."""
        size = len(data)
        try:
            done = os.write(self.fd, data)
        except BlockingIOError:
            done = 0
        except BrokenPipeError:
            raise PeerGone("the compiler closed its reading end") from None
        if done == size:  # the usual case: one system call
            return size
        return self._write_rest(memoryview(data), done)

    def _write_rest(self, view: memoryview, written: int) -> int:
        """Write ``view[written:]``, waiting (bounded) while the pipe is full."""
        size = len(view)
        while written < size:
            try:
                written += os.write(self.fd, view[written:])
            except BlockingIOError:
                wait = -1 if self.timeout is None else int(self.timeout * 1000)
                if not self._poll.poll(wait):
                    raise ChannelTimeout(
                        f"the compiler did not read within {self.timeout:g} s"
                    ) from None
            except BrokenPipeError:
                raise PeerGone("the compiler closed its reading end") from None
        return size

    def flush(self) -> None:
        """Nothing is buffered; present for file-like use."""


class HostEnds:
    """The model side's two open ends of a channel; close with :meth:`close`."""

    def __init__(self, writer: FdWriter, reader: FdReader) -> None:
        self.writer = writer
        self.reader = reader

    def close(self) -> None:
        """Close both file descriptors (idempotent)."""
        for fd in (self.writer.fd, self.reader.fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.writer.fd = self.reader.fd = -1

    def __enter__(self) -> "HostEnds":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_host_ends(
    base: str,
    open_timeout: Optional[float] = None,
    io_timeout: Optional[float] = None,
    watch: Watch = None,
) -> HostEnds:
    """Open a channel's model-side ends in the protocol order.

    ``BASE.in`` for writing first (waiting at most ``open_timeout`` seconds,
    giving up when ``watch()`` turns False), then ``BASE.out`` for reading.
    ``io_timeout`` bounds every later wait for data.
    """
    wfd = open_writer(base + ".in", open_timeout, watch)
    try:
        rfd = open_reader(base + ".out")
    except BaseException:
        os.close(wfd)
        raise
    return HostEnds(FdWriter(wfd, io_timeout), FdReader(rfd, io_timeout, watch))

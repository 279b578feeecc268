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
from typing import Callable, Optional

from mlbridge.errors import MlbridgeError

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
    """

    def __init__(self, fd: int, timeout: Optional[float] = None, watch: Watch = None,
                 watch_interval: float = 0.5) -> None:
        self.fd = fd
        self.timeout = timeout
        self.watch = watch
        self._interval_ms = int(watch_interval * 1000)
        self._buf = bytearray()
        self._pos = 0
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self.eof = False

    def _fill(self) -> bool:
        """Read more bytes into the buffer; False on end of file.

        Always waits in poll() before reading: before the writer connects,
        read() returning 0 does not mean end of file (poll, on Linux, reports
        a hang-up only after a writer came and went), and the compiler is
        usually still busy anyway.
        """
        if self.eof:
            return False
        if self._pos:
            del self._buf[:self._pos]
            self._pos = 0
        deadline = None
        ready = False
        while True:
            if ready:
                try:
                    chunk = os.read(self.fd, _READ_CHUNK)
                except BlockingIOError:
                    chunk = None
                if chunk is not None:
                    if not chunk:
                        self.eof = True
                        return False
                    self._buf += chunk
                    return True
            if deadline is None and self.timeout is not None:
                deadline = time.monotonic() + self.timeout
            wait = self._interval_ms if self.watch is not None else -1
            if deadline is not None:
                left = max(0, int((deadline - time.monotonic()) * 1000) + 1)
                wait = left if wait < 0 else min(wait, left)
            if self._poll.poll(wait):
                ready = True
                continue
            if self.watch is not None and not self.watch():
                raise PeerGone("the compiler exited while the model side waited for data")
            if deadline is not None and time.monotonic() >= deadline:
                raise ChannelTimeout(f"no data from the compiler within {self.timeout:g} s")

    def at_eof(self) -> bool:
        """True when no byte is buffered and the writer has closed."""
        return self._pos >= len(self._buf) and not self._fill()

    def readline(self, limit: int = 1 << 20) -> bytes:
        """One line including its ``\\n``; the partial rest at end of file."""
        while True:
            end = self._buf.find(b"\n", self._pos)
            if end >= 0:
                line = bytes(self._buf[self._pos:end + 1])
                self._pos = end + 1
                return line
            if len(self._buf) - self._pos > limit:
                raise ChannelError(f"line longer than {limit} bytes from the compiler")
            if not self._fill():
                line = bytes(self._buf[self._pos:])
                self._pos = len(self._buf)
                return line

    def read(self, n: int) -> bytes:
        """Exactly ``n`` bytes, or fewer only at end of file."""
        while len(self._buf) - self._pos < n:
            if not self._fill():
                break
        data = bytes(self._buf[self._pos:self._pos + n])
        self._pos += len(data)
        return data

    def readinto(self, target: memoryview) -> int:
        """Fill ``target`` completely (fewer bytes only at end of file)."""
        n = len(target)
        while len(self._buf) - self._pos < n:
            if not self._fill():
                n = len(self._buf) - self._pos
                break
        target[:n] = self._buf[self._pos:self._pos + n]
        self._pos += n
        return n


class FdWriter:
    """Writes all bytes to a non-blocking fd, each wait bounded by ``timeout``."""

    def __init__(self, fd: int, timeout: Optional[float] = None) -> None:
        self.fd = fd
        self.timeout = timeout
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)

    def write(self, data: bytes) -> int:
        """Write every byte of ``data`` (returns its length); raise on timeout
        or a closed reader."""
        view = memoryview(data)
        size = len(view)
        while view:
            try:
                done = os.write(self.fd, view)
            except BlockingIOError:
                wait = -1 if self.timeout is None else int(self.timeout * 1000)
                if not self._poll.poll(wait):
                    raise ChannelTimeout(
                        f"the compiler did not read within {self.timeout:g} s") from None
                continue
            except BrokenPipeError:
                raise PeerGone("the compiler closed its reading end") from None
            view = view[done:]
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


def open_host_ends(base: str, open_timeout: Optional[float] = None,
                   io_timeout: Optional[float] = None, watch: Watch = None) -> HostEnds:
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

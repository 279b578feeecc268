"""The model side of the ``shm`` pipe protocol: tensors in memory both sides map.

The compiler creates the region as an anonymous file (a memfd) whose size it
seals, and declares the session with the extended handshake (format
``"shm"``, the CPUs it may run on, and ``"shm":{"pid":P,"fd":N}``, where the
host opens the region as ``/proc/P/fd/N``). Each decision then goes through
the region: the compiler writes the features and bumps the request sequence
word, the host answers in place and sets the reply sequence word to it. The
FIFOs only carry rings, written when the other side said it sleeps; with the
two processes on two CPUs both spin briefly instead and no system call is
made per decision (docs/protocol.md).

The region comes from the peer: it is mapped only if it is a regular file of
this user sealed against shrinking, growing and further seals (so no access
to the mapping can fault with SIGBUS, whatever the compiler does later),
whose size and header agree word for word with the layout the host computes
from the declared specs (so every offset and size is the host's own, checked
against its budget first). Opening ``/proc/P/fd/N`` needs the kernel's
ptrace read access to P: a process of the same user.

The host's side relies on x86-64's memory order (stores are seen in program
order; loads are not reordered with loads): other machines refuse the format.
CPython has no memory fence; a lock round trip is one (its atomic
read-modify-write orders the stores before it and the loads after it), used
where each side stores "I sleep" and then reads the other's word.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import platform
import stat
import struct
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.policy import output_arrays, scalar_packer
from mlbridge.tensor_spec import TensorSpec

if TYPE_CHECKING:
    from mlbridge.channel import HostEnds
    from mlbridge.training_log import TrainingLogWriter

MAGIC = b"mlbshm01"
LAYOUT_VERSION = 1
HEADER_BYTES, ALIGN = 192, 64
#: The largest message area a host accepts (context names, error messages).
MAX_MESSAGE_CAPACITY = 64 * 1024
#: Byte offsets of the header's little-endian uint32 words.
REQUEST_SEQ, COMPILER_WAITING, CONTEXT_SEQ, CONTEXT_LENGTH = 64, 68, 72, 76
REPLY_SEQ, MODEL_WAITING, REPLY_STATUS, ERROR_LENGTH, SPIN_ALLOWED = 128, 132, 136, 140, 144
STATUS_RESULT, STATUS_ERROR = 0, 1
_LAYOUT_WORDS = struct.Struct("<8s8I")  # magic, then the words at 8..36
#: Checks of the request word per spin before sleeping (~40 us of CPython).
SPIN_CHECKS = 800
_X86_64 = ("x86_64", "amd64")


class SharedMemoryError(MlbridgeError):
    """The shared-memory file is missing, not ours, or disagrees with the specs."""


@dataclass(frozen=True)
class Layout:
    """Where a session's tensors and messages are (ShmLayout.h's twin)."""

    feature_offsets: Tuple[int, ...]
    output_offsets: Tuple[int, ...]
    request_offset: int
    request_bytes: int
    reply_offset: int
    reply_bytes: int
    message_offset: int
    message_capacity: int
    total: int

    def words(self) -> Tuple[Any, ...]:
        """The header as the compiler writes it."""
        return (
            MAGIC,
            LAYOUT_VERSION,
            self.total,
            self.request_offset,
            self.request_bytes,
            self.reply_offset,
            self.reply_bytes,
            self.message_offset,
            self.message_capacity,
        )


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def compute_layout(
    features: Sequence[TensorSpec], outputs: Sequence[TensorSpec], message_capacity: int
) -> Layout:
    """The request's tensors in order, each at a multiple of 64, from offset
    192; then the reply's; then the message area."""
    at = HEADER_BYTES

    def place(specs: Sequence[TensorSpec]) -> Tuple[Tuple[int, ...], int, int]:
        nonlocal at
        at = _align(at)
        start, offsets = at, []
        for spec in specs:
            at = _align(at)
            offsets.append(at)
            at += spec.nbytes
        return tuple(offsets), start, at - start

    feature_offsets, request_offset, request_bytes = place(features)
    output_offsets, reply_offset, reply_bytes = place(outputs)
    message_offset = _align(at)
    return Layout(
        feature_offsets,
        output_offsets,
        request_offset,
        request_bytes,
        reply_offset,
        reply_bytes,
        message_offset,
        message_capacity,
        _align(message_offset + message_capacity),
    )


def spin_allowed(compiler_cpus: Sequence[int]) -> bool:
    """Whether spinning can pay: the two processes' CPU sets hold two CPUs
    between them (else one side spinning keeps the other from running)."""
    return len(set(compiler_cpus) | os.sched_getaffinity(0)) >= 2


def check_platform() -> None:
    """Raise :class:`SharedMemoryError` where the host's memory-order
    assumptions do not hold."""
    if platform.machine().lower() not in _X86_64:
        raise SharedMemoryError(
            f"the shm format needs an x86-64 host (this one is {platform.machine()}): "
            f"use another format"
        )


#: The seals a region must carry: its size can never change.
REQUIRED_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
#: The largest process id and file descriptor a handshake may name.
MAX_PID, MAX_FD = 1 << 22, 1 << 20


def region_path(where: Any) -> str:
    """The path of the region a handshake's ``"shm"`` entry names
    (``{"pid": P, "fd": N}``), or :class:`SharedMemoryError`."""
    if not isinstance(where, dict) or set(where) != {"pid", "fd"}:
        raise SharedMemoryError('bad handshake: \'shm\' must be {"pid": P, "fd": N}')
    pid, fd = where["pid"], where["fd"]
    if not (type(pid) is int and 0 < pid <= MAX_PID and type(fd) is int and 0 <= fd <= MAX_FD):
        raise SharedMemoryError(f"bad handshake: no region can be at pid {pid!r} fd {fd!r}")
    return f"/proc/{pid}/fd/{fd}"


class SharedRegion:
    """The compiler's sealed memfd, checked against the session's specs and mapped."""

    def __init__(self, mm: mmap.mmap, layout: Layout) -> None:
        self.mm = mm
        self.layout = layout
        self.bytes = memoryview(mm)
        self.words = self.bytes.cast("I")

    @classmethod
    def open(
        cls,
        path: str,
        features: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        max_bytes: int,
    ) -> "SharedRegion":
        """Map ``path`` (see :func:`region_path`) after checking it (see the
        module doc); else :class:`SharedMemoryError` saying what is wrong."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as err:
            raise SharedMemoryError(f"cannot open {path}: {err.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SharedMemoryError(f"{path} is not a regular file")
            if info.st_uid != os.geteuid():
                raise SharedMemoryError(f"{path} belongs to uid {info.st_uid}, not this user")
            try:
                seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            except OSError:
                seals = 0  # a file that cannot carry seals
            if seals & REQUIRED_SEALS != REQUIRED_SEALS:
                raise SharedMemoryError(
                    f"{path} is not sealed against resizing (seals {seals:#x}, "
                    f"needed {REQUIRED_SEALS:#x}): not an mlbridge region"
                )
            head = os.pread(fd, _LAYOUT_WORDS.size, 0)
            if len(head) != _LAYOUT_WORDS.size:
                raise SharedMemoryError(f"{path} is shorter than its header")
            words = _LAYOUT_WORDS.unpack(head)
            if words[0] != MAGIC or words[1] != LAYOUT_VERSION:
                raise SharedMemoryError(
                    f"{path} is not an mlbridge shared memory of layout {LAYOUT_VERSION}"
                )
            capacity = words[8]
            if capacity > min(MAX_MESSAGE_CAPACITY, max_bytes):
                raise SharedMemoryError(
                    f"{path}: a message area of {capacity} bytes is over the limit of "
                    f"{min(MAX_MESSAGE_CAPACITY, max_bytes)}"
                )
            layout = compute_layout(features, outputs, capacity)
            if words != layout.words():
                raise SharedMemoryError(
                    f"{path}: the header {list(words[1:])} disagrees with the layout "
                    f"of the declared specs {list(layout.words()[1:])}"
                )
            if info.st_size != layout.total:
                raise SharedMemoryError(
                    f"{path} holds {info.st_size} bytes, the layout {layout.total}"
                )
            mm = mmap.mmap(fd, layout.total, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        return cls(mm, layout)

    def feature_views(self, features: Sequence[TensorSpec]) -> Dict[str, np.ndarray]:
        """Read-only arrays over the request's tensors."""
        views = {}
        for spec, offset in zip(features, self.layout.feature_offsets):
            view = np.frombuffer(self.mm, spec.dtype, spec.element_count, offset)
            view = view.reshape(spec.shape)
            view.flags.writeable = False
            views[spec.name] = view
        return views

    def close(self) -> None:
        """Unmap, once nothing refers to the mapping any more (views a
        policy kept leave it to the garbage collector)."""
        self.words.release()
        self.bytes.release()
        try:
            self.mm.close()
        except BufferError:
            pass


@dataclass
class Decisions:
    """What the serving loop needs from the host."""

    decide: Callable[[Dict[str, np.ndarray], str], Any]
    outputs: List[TensorSpec]
    logger: Optional["TrainingLogWriter"]
    limit: int  #: -1: no limit


def serve_shared(
    region: SharedRegion,
    ends: "HostEnds",
    features: Sequence[TensorSpec],
    decisions: Decisions,
    stats: Any,
    spin: bool,
) -> None:
    """Serve decisions through ``region`` until the compiler closes the
    channel (or ``decisions.limit``); ``stats`` is the host's HostStats."""
    words, raw, layout = region.words, region.bytes, region.layout
    req, rep, status = REQUEST_SEQ // 4, REPLY_SEQ // 4, REPLY_STATUS // 4
    compiler_waiting, model_waiting = COMPILER_WAITING // 4, MODEL_WAITING // 4
    context_seq, context_length = CONTEXT_SEQ // 4, CONTEXT_LENGTH // 4
    message, capacity = layout.message_offset, layout.message_capacity
    views = region.feature_views(features)
    outputs, logger, decide = decisions.outputs, decisions.logger, decisions.decide
    slots = [(o, o + s.nbytes) for o, s in zip(layout.output_offsets, outputs)]
    fast = scalar_packer(outputs[0]) if len(outputs) == 1 and logger is None else None
    first_slot = slice(*slots[0])
    wait_ring, ring_fd = ends.reader.wait_and_discard, ends.writer.fd
    fence = threading.Lock()
    acquire, release = fence.acquire, fence.release
    max_spin = SPIN_CHECKS if spin else 0
    # The compiler may have published request 1 already: start from 0.
    budget, sleeps, last, seen_context, context = max_spin, 0, 0, 0, ""
    done, limit = 0, decisions.limit
    perf_counter, start = time.perf_counter, 0.0
    try:
        while done != limit:
            if words[req] == last:
                left = budget
                while left and words[req] == last:
                    left -= 1
                if words[req] == last:  # sleep until the compiler rings
                    while True:
                        words[model_waiting] = 1
                        acquire()
                        release()
                        if words[req] != last:
                            break
                        if not wait_ring():
                            return  # the compiler closed the channel
                    words[model_waiting] = 0
                    budget //= 2
                    sleeps += 1
                    if sleeps % 256 == 0:
                        budget = max_spin
            last = words[req]
            timed = not done & 7  # one decision in 8, as the other modes
            if timed:
                start = perf_counter()
            if words[context_seq] != seen_context:
                seen_context, length = words[context_seq], words[context_length]
                if length > capacity:
                    raise SharedMemoryError(
                        f"context name of {length} bytes in a message area of {capacity}"
                    )
                context = str(raw[message : message + length], "utf-8", "replace")
                stats.contexts += 1
                if logger is not None:
                    logger.context(context)
            try:
                value = decide(views, context)
                reply = fast(value) if fast is not None else None
                if reply is not None:
                    raw[first_slot] = reply
                else:
                    answer = output_arrays(outputs, value)
                    for (start, end), array in zip(slots, answer.values()):
                        raw[start:end] = array.tobytes()
                    if logger is not None:
                        logger.observation({**views, **answer})
                words[status] = STATUS_RESULT
                done += 1
            except Exception as err:  # reported to the compiler; serving goes on
                text = f"{type(err).__name__}: {err}".encode("utf-8", "replace")[:capacity]
                raw[message : message + len(text)] = text
                words[ERROR_LENGTH // 4] = len(text)
                words[status] = STATUS_ERROR
                stats.errors_reported += 1
            words[rep] = last
            acquire()
            release()
            if words[compiler_waiting]:
                try:
                    os.write(ring_fd, b"\0")
                except BlockingIOError:
                    pass  # rings are pending already
                except BrokenPipeError:
                    return
            if timed:
                stats.add_reply_time(perf_counter() - start)
    finally:
        stats.decisions += done
        del views


__all__ = [
    "REQUIRED_SEALS",
    "Decisions",
    "Layout",
    "SharedMemoryError",
    "SharedRegion",
    "check_platform",
    "compute_layout",
    "region_path",
    "serve_shared",
    "spin_allowed",
]

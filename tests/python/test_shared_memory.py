"""The shm pipe protocol's model side against a compiler side written here.

The C++ runner against this host is tested in tests/cpp/PythonHostTest.cpp
(PythonHostShared); these tests pin the layout and play a hostile or
careless compiler: every region the host should not map is refused, with a
refusal naming the problem, before anything is mapped, and no region it
maps can be resized under it.
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import struct
import threading
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pytest

from mlbridge import shared_memory as shm
from mlbridge.channel import create_channel
from mlbridge.pipe_host import PipeHost, ProtocolError
from mlbridge.tensor_spec import TensorSpec

FEATURES = [TensorSpec("x", "int64_t", (1,)), TensorSpec("m", "float", (2, 2))]
OUTPUTS = [TensorSpec("decision", "int64_t", (1,))]
CAPACITY = 4096

pytestmark = pytest.mark.skipif(
    os.uname().machine.lower() not in ("x86_64", "amd64"), reason="the shm host needs x86-64"
)


def test_layout_is_pinned():
    """The numbers docs/protocol.md gives (ShmLayout.cpp computes the same:
    a disagreement makes every C++ <-> Python shm test fail)."""
    layout = shm.compute_layout(FEATURES, OUTPUTS, 65536)
    assert layout.feature_offsets == (192, 256) and layout.output_offsets == (320,)
    assert (layout.request_offset, layout.request_bytes) == (192, 80)
    assert (layout.reply_offset, layout.reply_bytes) == (320, 8)
    assert (layout.message_offset, layout.message_capacity, layout.total) == (384, 65536, 65920)


class FakeCompiler:
    """The compiler side of the shm protocol, in Python, for one session."""

    def __init__(self, base: str, layout: Optional[shm.Layout] = None) -> None:
        self.base = base
        self.layout = layout or shm.compute_layout(FEATURES, OUTPUTS, CAPACITY)
        self.seq = 0
        self.context_seq = 0
        self.fd = self.named = -1

    def create_region(
        self,
        seals: int = shm.REQUIRED_SEALS,
        header: Optional[bytes] = None,
        size: Optional[int] = None,
    ) -> None:
        """The region as the C++ runner makes it: a memfd, sized, sealed, mapped."""
        self.fd = os.memfd_create("test-shm", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, self.layout.total if size is None else size)
        if header is None:
            header = struct.pack("<8s8I", *self.layout.words())
        os.pwrite(self.fd, header, 0)
        if seals:
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, seals)
        self.mm = mmap.mmap(self.fd, self.layout.total)
        self.words = memoryview(self.mm).cast("I")

    def where(self) -> Dict[str, int]:
        """The handshake's "shm" entry: the region, or the file named instead."""
        return {"pid": os.getpid(), "fd": self.fd if self.named < 0 else self.named}

    def open(self, handshake: Dict[str, Any]) -> bytes:
        """Open the FIFOs in LLVM's order, send the handshake, return the reply."""
        self.inp = open(self.base + ".in", "rb", buffering=0)
        self.out = open(self.base + ".out", "wb", buffering=0)
        self.out.write(json.dumps(handshake).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = self.inp.read(1)
            if not chunk:
                break
            reply += chunk
        return reply

    def decide(self, x: int, m: List[float]) -> Any:
        """One request; the int64 answer, or ("error", message)."""
        raw = memoryview(self.mm)
        raw[192:200] = struct.pack("<q", x)
        raw[256:272] = np.array(m, np.float32).tobytes()
        self.seq += 1
        self.words[shm.REQUEST_SEQ // 4] = self.seq
        if self.words[shm.MODEL_WAITING // 4]:
            self.out.write(b"\0")
        while self.words[shm.REPLY_SEQ // 4] != self.seq:
            self.words[shm.COMPILER_WAITING // 4] = 1
            if self.words[shm.REPLY_SEQ // 4] == self.seq:
                break
            assert self.inp.read(1), "the host closed its end"
        self.words[shm.COMPILER_WAITING // 4] = 0
        if self.words[shm.REPLY_STATUS // 4] == shm.STATUS_ERROR:
            length = self.words[shm.ERROR_LENGTH // 4]
            start = self.layout.message_offset
            return ("error", bytes(raw[start : start + length]).decode())
        return struct.unpack_from("<q", self.mm, 320)[0]

    def switch_context(self, name: str) -> None:
        data = name.encode()
        memoryview(self.mm)[self.layout.message_offset : self.layout.message_offset + len(data)] = (
            data
        )
        self.words[shm.CONTEXT_LENGTH // 4] = len(data)
        self.context_seq += 1
        self.words[shm.CONTEXT_SEQ // 4] = self.context_seq

    def close(self) -> None:
        self.out.close()
        self.inp.close()
        for fd in (self.fd, self.named):
            if fd >= 0:
                os.close(fd)


def handshake(c: FakeCompiler, **changes: Any) -> Dict[str, Any]:
    hello: Dict[str, Any] = {
        "mlbridge": 1,
        "format": "shm",
        "features": [s.to_json() for s in FEATURES],
        "outputs": [s.to_json() for s in OUTPUTS],
        "cpus": [0, 1],
        "shm": c.where(),
    }
    hello.update(changes)
    return hello


def run(
    script: Callable[[FakeCompiler], None], policy: Callable[..., Any], prepare=None
) -> Dict[str, Any]:
    """Serve one session in a thread while ``script`` plays the compiler."""
    result: Dict[str, Any] = {}
    with create_channel() as channel:
        compiler = FakeCompiler(channel.base)
        (prepare or (lambda c: c.create_region()))(compiler)

        def host() -> None:
            try:
                result["stats"] = PipeHost(policy, open_timeout=10, io_timeout=10).serve(
                    channel.base
                )
            except Exception as err:  # noqa: BLE001 - checked by the test
                result["error"] = err

        thread = threading.Thread(target=host, daemon=True)
        thread.start()
        try:
            script(compiler)
        finally:
            compiler.close()
            thread.join(10)
            assert not thread.is_alive()
    return result


def test_decisions_contexts_and_policy_errors():
    seen: List[Any] = []

    def policy(features: Dict[str, np.ndarray], context: str = "") -> int:
        assert not features["x"].flags.writeable
        seen.append((context, features["m"].shape))
        x = int(features["x"][0])
        if x < 0:
            raise ValueError("negative")
        return x * 10 + int(features["m"].sum())

    answers = []

    def script(c: FakeCompiler) -> None:
        assert c.open(handshake(c)) == b'{"mlbridge":1}\n'
        assert c.words[shm.SPIN_ALLOWED // 4] == 1  # two CPUs between them
        answers.append(c.decide(1, [1, 2, 3, 4]))
        c.switch_context("main")
        answers.append(c.decide(2, [0, 0, 0, 1]))
        answers.append(c.decide(-1, [0, 0, 0, 0]))
        answers.append(c.decide(3, [0, 0, 0, 0]))

    result = run(script, policy)
    assert "error" not in result, result
    assert answers == [20, 21, ("error", "ValueError: negative"), 30]
    assert [context for context, _ in seen] == ["", "main", "main", "main"]
    stats = result["stats"]
    assert (stats.mode, stats.decisions, stats.contexts, stats.errors_reported) == ("shm", 3, 1, 1)


def refusal(prepare: Callable[[FakeCompiler], None], match: str, **changes: Any) -> None:
    replies = []
    result = run(lambda c: replies.append(c.open(handshake(c, **changes))), lambda f: 0, prepare)
    assert isinstance(result.get("error"), ProtocolError), result
    assert match in str(result["error"]), result["error"]
    reply = json.loads(replies[0])
    assert reply["mlbridge"] == 1 and match in reply["error"]


def test_a_handshake_without_a_region_is_refused():
    refusal(lambda c: c.create_region(), "'shm' must be", shm=None)


@pytest.mark.parametrize(
    "where", [{"pid": 0, "fd": 3}, {"pid": 1, "fd": -1}, {"pid": "1", "fd": 3}]
)
def test_a_region_nowhere_is_refused(where):
    refusal(lambda c: c.create_region(), "no region can be", shm=where)


def test_a_closed_descriptor_is_refused():
    refusal(lambda c: c.create_region(), "cannot open", shm={"pid": os.getpid(), "fd": 1 << 20})


@pytest.mark.parametrize(
    "seals", [0, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW]
)
def test_a_region_the_compiler_could_resize_is_refused(seals):
    refusal(lambda c: c.create_region(seals=seals), "not sealed against resizing")


def test_a_regular_file_is_refused(tmp_path):
    """An ordinary file (the protocol's first version) can be truncated under
    the host's mapping: refused, and nothing is written to it."""
    path = tmp_path / "region"
    layout = shm.compute_layout(FEATURES, OUTPUTS, CAPACITY)
    path.write_bytes(struct.pack("<8s8I", *layout.words()).ljust(layout.total, b"\0"))
    before = path.read_bytes()

    def prepare(c: FakeCompiler) -> None:
        c.create_region()
        c.named = os.open(path, os.O_RDWR)

    refusal(prepare, "not sealed against resizing")
    assert path.read_bytes() == before


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)

    def prepare(c: FakeCompiler) -> None:
        c.create_region()
        c.named = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)

    refusal(prepare, "not a regular file")


def test_a_header_that_disagrees_with_the_specs_is_refused():
    def prepare(c: FakeCompiler) -> None:
        words = list(c.layout.words())
        words[5] = 4  # the reply somewhere else (into the request)
        c.create_region(header=struct.pack("<8s8I", *words))

    refusal(prepare, "disagrees with the layout")


def test_a_file_of_another_size_is_refused():
    def prepare(c: FakeCompiler) -> None:
        c.create_region(size=c.layout.total + 4096)

    total = shm.compute_layout(FEATURES, OUTPUTS, CAPACITY).total
    refusal(prepare, f"holds {total + 4096} bytes")


def test_an_oversized_message_area_is_refused():
    def prepare(c: FakeCompiler) -> None:
        c.layout = shm.compute_layout(FEATURES, OUTPUTS, 1 << 20)
        c.create_region()

    refusal(prepare, "over the limit")


@pytest.mark.parametrize("cpus", [None, [], "0", [-1], [0, "1"], list(range(70000))])
def test_a_bad_cpu_list_is_refused(cpus):
    refusal(lambda c: c.create_region(), "'cpus'", cpus=cpus)


def test_the_compiler_cannot_resize_or_replace_the_region_mid_session():
    """What killed the host with SIGBUS when the region was a named file:
    the compiler truncating, growing or replacing it between two decisions.
    The seals refuse the first two; the host maps what it checked, so a
    descriptor replaced afterwards changes nothing."""
    answers, refused = [], []

    def script(c: FakeCompiler) -> None:
        assert c.open(handshake(c)) == b'{"mlbridge":1}\n'
        answers.append(c.decide(1, [0, 0, 0, 0]))
        for resize in (
            lambda: os.ftruncate(c.fd, 0),
            lambda: os.ftruncate(c.fd, 4096),
            lambda: os.ftruncate(c.fd, c.layout.total * 2),
            lambda: os.posix_fallocate(c.fd, 0, c.layout.total * 2),
            lambda: fcntl.fcntl(c.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE),
        ):
            with pytest.raises(PermissionError):
                resize()
            refused.append(True)
            answers.append(c.decide(2, [0, 0, 0, 0]))
        small = os.memfd_create("other", os.MFD_CLOEXEC)
        os.dup2(small, c.fd)  # the number now names an empty file
        os.close(small)
        answers.append(c.decide(3, [0, 0, 0, 0]))

    result = run(script, lambda f: int(f["x"][0]))
    assert "error" not in result, result
    assert answers == [1, 2, 2, 2, 2, 2, 3] and len(refused) == 5


def test_a_context_length_beyond_the_area_ends_the_session():
    def script(c: FakeCompiler) -> None:
        c.open(handshake(c))
        c.words[shm.CONTEXT_LENGTH // 4] = CAPACITY + 1
        c.words[shm.CONTEXT_SEQ // 4] = 1
        c.seq += 1
        c.words[shm.REQUEST_SEQ // 4] = c.seq
        if c.words[shm.MODEL_WAITING // 4]:
            c.out.write(b"\0")

    result = run(script, lambda f: 0)
    assert isinstance(result.get("error"), shm.SharedMemoryError), result
    assert "context name of 4097 bytes" in str(result["error"])


def test_spinning_is_off_when_both_sides_have_one_cpu_between_them():
    own = sorted(os.sched_getaffinity(0))
    if len(own) != 1:
        assert shm.spin_allowed([own[0]])  # another CPU of ours is free
    os.sched_setaffinity(0, {own[0]})
    try:
        assert not shm.spin_allowed([own[0]])
        assert shm.spin_allowed([own[0] + 1])
    finally:
        os.sched_setaffinity(0, set(own))

"""atheris target: the shm region a compiler hands the Python host.

The input is the region's seals (first byte), its size (second byte: the
layout's, or off by some multiple of 64) and its first bytes (the header
words, the ring words, the context and the request's tensors), put into a
memfd. ``SharedRegion.open`` must refuse it with SharedMemoryError or map
it; a mapped region is then served for one decision (``serve_shared``: the
context word and length, the request), with a policy answering zeros; the
compiler's doorbell is a pipe already at its end. Nothing but
MlbridgeError may escape, and nothing may fault (a sealed region cannot
shrink). Seeds: tests/fuzz/corpus/fuzz_py_shm_region.
"""

from __future__ import annotations

import fcntl
import os
import struct
from typing import Any, Dict

import fuzz_support  # first: imports mlbridge instrumented
import numpy as np

from mlbridge import shared_memory as shm
from mlbridge.channel import FdReader, FdWriter, HostEnds
from mlbridge.errors import MlbridgeError
from mlbridge.pipe_host import HostStats
from mlbridge.tensor_spec import TensorSpec

FEATURES = [TensorSpec("x", "int64_t", (1,)), TensorSpec("m", "float", (2, 2))]
OUTPUTS = [TensorSpec("decision", "int64_t", (1,))]
LAYOUT = shm.compute_layout(FEATURES, OUTPUTS, 1024)
_SEALS = (
    fcntl.F_SEAL_SHRINK,
    fcntl.F_SEAL_GROW,
    fcntl.F_SEAL_SEAL,
)
_DEV_NULL = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


def _policy(features: Dict[str, np.ndarray], context: str) -> Any:
    return int(features["x"][0]) & 0xFF


def test_one_input(data: bytes) -> None:
    """Check and serve the region ``data`` describes."""
    if len(data) < 2:
        return
    seals = sum(s for i, s in enumerate(_SEALS) if data[0] >> i & 1)
    if data[0] & 8 == 0:
        seals = shm.REQUIRED_SEALS  # most inputs: a well-sealed region
    size = max(0, LAYOUT.total + (int(data[1]) - 128) * 64 * (data[1] % 3 == 0))
    body = data[2:]
    if data[0] & 16 == 0:  # most inputs: the right header, fuzzed words after it
        body = struct.pack("<8s8I", *LAYOUT.words()) + body[44:]
    fd = os.memfd_create("fuzz-shm", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    read_end, write_end = os.pipe()
    try:
        os.ftruncate(fd, size)
        os.pwrite(fd, body[:size], 0)
        if seals:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
        os.close(write_end)
        write_end = -1
        try:
            region = shm.SharedRegion.open(f"/proc/self/fd/{fd}", FEATURES, OUTPUTS, 1 << 20)
        except MlbridgeError:
            return
        ends = HostEnds(FdWriter(_DEV_NULL), FdReader(read_end))
        decisions = shm.Decisions(lambda f, c: _policy(f, c), OUTPUTS, None, 1)
        try:
            shm.serve_shared(region, ends, FEATURES, decisions, HostStats(), False)
        except MlbridgeError:
            pass
        finally:
            region.close()
    finally:
        os.close(fd)
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


if __name__ == "__main__":
    fuzz_support.main(test_one_input)

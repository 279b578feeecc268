"""atheris target: a whole pipe-host session on the bytes a compiler sends.

PipeHost.serve_ends reads the input from a real pipe through
mlbridge.channel.FdReader (the header line; mlgo mode's context and
observation records, or extended mode's handshake and frames; the tensor
specs in both) and answers a policy that returns zeros for every declared
output; the replies go to /dev/null. Seeds: tests/fuzz/corpus/fuzz_py_pipe_host
(sessions in both modes).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

import fuzz_support  # first: imports mlbridge instrumented
import numpy as np

from mlbridge.channel import FdReader, FdWriter, HostEnds
from mlbridge.errors import MlbridgeError
from mlbridge.pipe_host import PipeHost
from mlbridge.policy import Session
from mlbridge.tensor_spec import TensorSpec

MAX_BYTES = 1 << 20
_DEV_NULL = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


class ZeroPolicy:
    """Answers zeros for every output the session declares."""

    def __init__(self) -> None:
        self.outputs: List[TensorSpec] = []

    def begin(self, session: Session) -> None:
        """Learn the outputs of the session."""
        self.outputs = list(session.outputs)

    def __call__(self, features: Dict[str, np.ndarray]) -> Dict[str, Any]:
        if sum(s.nbytes for s in self.outputs) > MAX_BYTES:
            raise ValueError("outputs too large for the fuzzing policy")
        return {s.name: np.zeros(s.shape, s.dtype) for s in self.outputs}


def test_one_input(data: bytes) -> None:
    """Serve one session whose compiler sent ``data`` and closed."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)  # inputs are smaller than the pipe's capacity
        os.close(write_end)
        write_end = -1
        ends = HostEnds(FdWriter(_DEV_NULL), FdReader(read_end))
        try:
            PipeHost(ZeroPolicy(), max_bytes=MAX_BYTES).serve_ends(ends)
        except MlbridgeError:
            pass
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


if __name__ == "__main__":
    fuzz_support.main(test_one_input)

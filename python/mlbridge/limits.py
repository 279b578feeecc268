"""Size budgets: what a peer may make this process allocate.

Peers (compilers, clients, log files, models) declare tensor shapes before any
data arrives. Every place that allocates from such a declaration checks it here
first, against one budget, so a few hostile bytes can never make the process
reserve gigabytes:

- :func:`check_schema` -- the tensors one message carries: each, and all of
  them together, must fit the message limit (a request or record larger than
  that could never be received anyway).
- :class:`MemoryBudget` -- the memory a server keeps for its open sessions.

Both raise :class:`BudgetError`, a :class:`mlbridge.errors.CodecError` that a
gRPC server maps to RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import threading
from typing import Sequence

from mlbridge.errors import CodecError
from mlbridge.tensor_spec import TensorSpec

#: Default bound on one encoded message or record (64 MiB).
DEFAULT_MAX_BYTES = 64 << 20

#: Default bound on the memory a server keeps for all its sessions (1 GiB).
DEFAULT_SESSION_MEMORY = 1 << 30

#: Most tensors one schema may declare (each costs objects beyond its bytes).
MAX_TENSORS = 1 << 16

#: Longest header line (a JSON list of every spec) a host or log reader reads.
MAX_HEADER_LINE = 8 << 20

#: Largest ONNX model file read (protobuf's limit on one message, as the C++
#: runners': larger weights live in external data files, which are not read).
MAX_ONNX_MODEL_BYTES = (1 << 31) - 1


class BudgetError(CodecError):
    """A declared size exceeds a budget: nothing was allocated for it."""


def check_schema(specs: Sequence[TensorSpec], max_bytes: int, what: str, extra: int = 0) -> int:
    """Check that one message of ``specs`` fits ``max_bytes``; return its size.

    ``extra`` bytes of framing are counted with the tensors (e.g. the newline
    closing an mlgo observation). The error names the first tensor that alone
    exceeds the limit, or the total when only the sum does.
    """
    if len(specs) > MAX_TENSORS:
        raise BudgetError(
            f"{what}: {len(specs)} tensors declared, at most {MAX_TENSORS} are accepted"
        )
    total = extra
    for spec in specs:
        if spec.nbytes > max_bytes:
            raise BudgetError(
                f"{what}: tensor '{spec.name}' declares {spec.nbytes} bytes "
                f"({spec.type_name} x {list(spec.shape)}), more than the "
                f"message limit of {max_bytes} bytes"
            )
        total += spec.nbytes
    if total > max_bytes:
        raise BudgetError(
            f"{what}: the {len(specs)} tensors declare {total} bytes together, "
            f"more than the message limit of {max_bytes} bytes"
        )
    return total


class MemoryBudget:
    """A thread-safe pool of bytes that sessions reserve and give back.

    ``reserve`` raises :class:`BudgetError` (and reserves nothing) when the
    request does not fit in what is left; ``release`` returns bytes.
    """

    def __init__(self, limit: int = DEFAULT_SESSION_MEMORY) -> None:
        if limit < 0:
            raise ValueError(f"memory budget must be >= 0, got {limit}")
        self.limit = limit
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        """Bytes reserved now."""
        with self._lock:
            return self._used

    def reserve(self, nbytes: int, what: str) -> None:
        """Take ``nbytes`` from the pool, or raise naming ``what``."""
        with self._lock:
            if self._used + nbytes > self.limit:
                raise BudgetError(
                    f"{what}: needs {nbytes} bytes, the server's session "
                    f"memory budget has {self.limit - self._used} of "
                    f"{self.limit} bytes left"
                )
            self._used += nbytes

    def release(self, nbytes: int) -> None:
        """Give ``nbytes`` back to the pool."""
        with self._lock:
            self._used = max(0, self._used - nbytes)


__all__ = [
    "BudgetError",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_SESSION_MEMORY",
    "MAX_HEADER_LINE",
    "MAX_ONNX_MODEL_BYTES",
    "MAX_TENSORS",
    "MemoryBudget",
    "check_schema",
]

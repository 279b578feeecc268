"""mlbridge: the model side of the compiler <-> ML bridge.

Serves policies to compilers over pipes (LLVM's MLGO interactive protocol and
mlbridge's extended protocol), encodes and decodes the wire formats (bitstream,
JSON, protobuf), reads and writes LLVM training logs, and drives stock LLVM 19's
ML advisors. See docs/protocol.md for the wire formats.
"""

from mlbridge._version import __version__
from mlbridge.tensor_spec import DTYPES, TensorSpec

__all__ = ["DTYPES", "TensorSpec", "__version__"]

"""The operators mlbridge-aot compiles, by ONNX op type."""

from __future__ import annotations

from mlbridge.aot.ops.common import Operator
from mlbridge.aot.ops.elementwise import ELEMENTWISE
from mlbridge.aot.ops.layout import LAYOUT
from mlbridge.aot.ops.linear import LINEAR
from mlbridge.aot.ops.reduce import REDUCE
from mlbridge.aot.ops.softmax import SOFTMAX

#: Operator implementations by ONNX op type.
OPERATORS: dict = {**ELEMENTWISE, **LAYOUT, **LINEAR, **REDUCE, **SOFTMAX}

#: Operators that are always folded at compile time (their inputs are
#: constant or, for Shape, their result is fixed by the static shapes).
FOLDED_ONLY = ("Constant", "Shape")


def supported_ops() -> str:
    """Comma-separated list of the supported op types, for error messages."""
    return ", ".join(sorted(list(OPERATORS) + list(FOLDED_ONLY)))


__all__ = ["OPERATORS", "Operator", "supported_ops"]

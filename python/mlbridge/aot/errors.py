"""The one error mlbridge-aot raises on purpose."""

from __future__ import annotations

from mlbridge.errors import MlbridgeError


class AotError(MlbridgeError, ValueError):
    """The model cannot be compiled ahead of time (unsupported operator,
    dynamic shape, unsupported type, invalid model, over budget); the message
    names the node or tensor."""


__all__ = ["AotError"]

"""Exception hierarchy of mlbridge.

Every error mlbridge raises on purpose derives from :class:`MlbridgeError`.
Malformed bytes (payloads, frames, training logs) raise :class:`CodecError`
or a subclass; it is also a ``ValueError``.
"""

from __future__ import annotations


class MlbridgeError(Exception):
    """Base class of every mlbridge error."""


class CodecError(MlbridgeError, ValueError):
    """A payload cannot be encoded or decoded (malformed, wrong schema...)."""


class ModelError(MlbridgeError, RuntimeError):
    """The model side reported a failure (a reply carrying an error message)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"model side reported an error: {message}")
        #: The message the model side sent, verbatim.
        self.model_message = message


class FrameError(CodecError):
    """An extended-mode frame is malformed, truncated or too large."""


class EndOfStream(FrameError):
    """The stream ended cleanly at a frame boundary (the peer closed it)."""


class TrainingLogError(CodecError):
    """A training log is malformed or truncated."""


class CorpusError(MlbridgeError):
    """A corpus (mlbridge.corpus) cannot be read: a malformed
    compile_commands.json or corpus_description.json, a missing file, a path
    leaving the corpus, an unsupported layout."""

"""LLVM training logs (the format of llvm/lib/Analysis/TrainingLogger.cpp).

::

    {"features":[<spec>...],"score":<spec>,"advice":<spec>}\\n
    {"context":"<name>"}\\n
    {"observation":<n>}\\n
    <raw bytes of every feature in header order>\\n
    {"outcome":<n>}\\n          only when "score" is declared
    <raw bytes of the score tensor>\\n

Readers use the sizes from the header, never newlines: tensor bytes may
contain 0x0a. A reader checks the header before reading any record: valid
specs with unique names, and each record (the features, the score) within
``max_record_bytes``. Observation numbers count from 0 within a context (as
in LLVM, switching back to a context continues its numbering).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, Iterator, List, Mapping, Optional, Sequence, TextIO, Union

import numpy as np

from mlbridge.codecs.schema import arrays_for
from mlbridge.errors import CodecError, TrainingLogError
from mlbridge.jsontext import format_array, load_json, quote_string
from mlbridge.limits import DEFAULT_MAX_BYTES, MAX_HEADER_LINE, BudgetError, check_schema
from mlbridge.tensor_spec import SpecError, TensorSpec, check_unique_names, specs_from_json

_MAX_EVENT_LINE = 1 << 20  # {"context":...}, {"observation":n}, {"outcome":n}


@dataclass(frozen=True)
class Record:
    """One logged observation."""

    context: Optional[str]
    observation: int
    tensors: Dict[str, np.ndarray]
    reward: Optional[np.ndarray] = None


class TrainingLogWriter:
    """Writes an LLVM training log to a binary stream.

    ``features`` are logged in order for every observation; ``score`` (the
    reward spec) and ``advice`` are optional, as in LLVM's header.
    """

    def __init__(
        self,
        stream: BinaryIO,
        features: Sequence[TensorSpec],
        score: Optional[TensorSpec] = None,
        advice: Optional[TensorSpec] = None,
    ) -> None:
        self._stream = stream
        self.features = list(features)
        check_unique_names(self.features, "training log", TrainingLogError)
        self.score = score
        self.advice = advice
        self._feature_bytes = sum(spec.nbytes for spec in self.features)
        self._context: Optional[str] = None
        self._next_observation: Dict[str, int] = {}
        header = '{"features":[' + ",".join(s.to_json_str() for s in self.features) + "]"
        if score is not None:
            header += ',"score":' + score.to_json_str()
        if advice is not None:
            header += ',"advice":' + advice.to_json_str()
        stream.write(header.encode() + b"}\n")

    @property
    def in_context(self) -> bool:
        """Whether a context was switched to (observations need one)."""
        return self._context is not None

    def context(self, name: str) -> None:
        """Switch to context ``name`` (e.g. the function being compiled)."""
        self._context = name
        self._stream.write(b'{"context":' + quote_string(name).encode() + b"}\n")

    def observation(self, tensors: Union[Mapping[str, Any], bytes], reward: Any = None) -> int:
        """Log one observation (and its reward when ``score`` is declared).

        ``tensors`` maps every feature name to its value, or is the raw bytes
        of all features in header order. Returns the observation number.
        """
        if self._context is None:
            raise TrainingLogError("training log: call context() before observation()")
        if (reward is None) != (self.score is None):
            raise TrainingLogError(
                "training log: a reward must be given exactly when the log declares a score"
            )
        if isinstance(tensors, (bytes, bytearray, memoryview)):
            raw = bytes(tensors)
            if len(raw) != self._feature_bytes:
                raise TrainingLogError(
                    f"training log: raw observation has {len(raw)} "
                    f"bytes, the features need {self._feature_bytes}"
                )
        else:
            raw = b"".join(a.tobytes() for a in self._arrays(self.features, tensors))
        number = self._next_observation.get(self._context, 0)
        self._next_observation[self._context] = number + 1
        out = [b'{"observation":%d}\n' % number, raw, b"\n"]
        if self.score is not None:
            value = reward.get(self.score.name) if isinstance(reward, Mapping) else reward
            score_bytes = self._arrays([self.score], {self.score.name: value})[0].tobytes()
            out += [b'{"outcome":%d}\n' % number, score_bytes, b"\n"]
        self._stream.write(b"".join(out))
        return number

    def flush(self) -> None:
        """Flush the underlying stream."""
        self._stream.flush()

    @staticmethod
    def _arrays(specs: Sequence[TensorSpec], tensors: Mapping[str, Any]) -> List[np.ndarray]:
        try:
            return arrays_for(specs, tensors, "training log")
        except CodecError as err:
            raise TrainingLogError(str(err)) from None


class TrainingLogReader:
    """Reads an LLVM training log from a binary stream; iterate for records.

    The header is checked first: a record (the features, or the score) larger
    than ``max_record_bytes`` is refused, naming the tensor, before anything
    is read or allocated for it.
    """

    def __init__(self, stream: BinaryIO, max_record_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._stream = stream
        self._line = 0
        header = self._json_line(MAX_HEADER_LINE, "header")
        if header is None:
            raise TrainingLogError("training log: empty file (no header)")
        try:
            self.features = specs_from_json(header.get("features"), "features")
            self.score = _optional_spec(header, "score")
            self.advice = _optional_spec(header, "advice")
            check_schema(self.features, max_record_bytes, "features", extra=1)
            if self.score is not None:
                check_schema([self.score], max_record_bytes, "score", extra=1)
        except (SpecError, BudgetError) as err:
            raise TrainingLogError(f"training log: bad header: {err}") from None

    def __iter__(self) -> Iterator[Record]:
        context: Optional[str] = None
        event = self._event()
        while event is not None:
            if "context" in event:
                context = event["context"]
                if not isinstance(context, str):
                    raise self._error(f"context must be a string, got {context!r}")
                event = self._event()
                continue
            number = event.get("observation")
            if not isinstance(number, int) or isinstance(number, bool):
                raise self._error(f"expected a context or observation line, got {event!r}")
            tensors = {spec.name: self._tensor(spec) for spec in self.features}
            self._newline(f"observation {number}")
            reward = None
            event = self._event()
            if self.score is not None:  # LLVM logs an outcome after every observation
                if event is None or "outcome" not in event:
                    raise self._error(
                        f"truncated file or bad line: expected the outcome "
                        f"of observation {number}, got {event!r}"
                    )
                if event["outcome"] != number:
                    raise self._error(f"outcome {event['outcome']!r} follows observation {number}")
                reward = self._tensor(self.score)
                self._newline(f"outcome {number}")
                event = self._event()
            elif event is not None and "outcome" in event:
                raise self._error("outcome line but the header declares no score")
            yield Record(context, number, tensors, reward)

    def _read(self, size: int, what: str) -> bytes:
        data = self._stream.read(size)
        while data is not None and len(data) < size:
            more = self._stream.read(size - len(data))
            if not more:
                break
            data += more
        if data is None or len(data) != size:
            got = 0 if data is None else len(data)
            raise self._error(f"truncated file: {what} needs {size} bytes, got {got}")
        return data

    def _tensor(self, spec: TensorSpec) -> np.ndarray:
        data = self._read(spec.nbytes, f"tensor '{spec.name}'")
        return np.frombuffer(data, dtype=spec.dtype).reshape(spec.shape).copy()

    def _newline(self, what: str) -> None:
        if self._read(1, f"the newline after {what}") != b"\n":
            raise self._error(f"expected a newline after the tensor bytes of {what}")
        self._line += 1

    def _event(self) -> Optional[Dict[str, Any]]:
        return self._json_line(_MAX_EVENT_LINE, "event")

    def _json_line(self, limit: int, what: str) -> Optional[Dict[str, Any]]:
        """The next line, a JSON object; None at the end of the file."""
        line = self._stream.readline(limit + 1)
        if not line:
            return None
        self._line += 1
        if not line.endswith(b"\n"):
            if len(line) > limit:
                raise self._error(f"{what} line longer than {limit} bytes")
            raise self._error(f"truncated file: {what} line has no newline")
        return load_json(line, f"{self._where()}: bad {what} line {line[:80]!r}", TrainingLogError)

    def _where(self) -> str:
        return f"training log, line {self._line}"

    def _error(self, message: str) -> TrainingLogError:
        return TrainingLogError(f"{self._where()}: {message}")


def _optional_spec(header: Mapping[str, Any], key: str) -> Optional[TensorSpec]:
    return TensorSpec.from_json(header[key]) if key in header else None


def read_training_log(
    stream: BinaryIO, max_record_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[Record]:
    """Iterate over the records of the training log in ``stream``."""
    return iter(TrainingLogReader(stream, max_record_bytes))


def _values_text(arr: np.ndarray) -> str:
    return "[" + format_array(arr).replace(",", " ") + "]"


def dump_lines(stream: BinaryIO) -> Iterator[str]:
    """Human-readable lines, one per record::

    context=foo observation=3 a=[1 2 3] b=[0.5] reward=[1.5]
    """
    for record in read_training_log(stream):
        parts = [f"context={record.context}", f"observation={record.observation}"]
        parts += [f"{name}={_values_text(arr)}" for name, arr in record.tensors.items()]
        if record.reward is not None:
            parts.append(f"reward={_values_text(record.reward)}")
        yield " ".join(parts)


def dump(source: Union[str, os.PathLike, BinaryIO], out: TextIO) -> int:
    """Write the dump of a training log (a path or binary stream) to ``out``.

    Returns the number of records.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as stream:
            return dump(stream, out)
    count = 0
    for line in dump_lines(source):
        out.write(line + "\n")
        count += 1
    return count

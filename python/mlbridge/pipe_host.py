"""Serve a policy to a compiler over a pipe channel (both protocol modes).

Policies follow the contract of :mod:`mlbridge.policy` (a callable taking the
features, optionally the context, with an optional ``begin(session)``); only
one output is served in mlgo mode, several in extended mode. The feature arrays
are read-only views into a buffer the host reuses for the next decision.

The mode is detected from the compiler's first line: a ``"mlbridge"`` key
means the extended mode (handshake reply, then frames), anything else with
``"features"`` and ``"advice"`` is LLVM's mlgo mode (raw tensor bytes).
In mlgo mode a failing policy cannot be reported to the compiler: :meth:`serve`
raises :class:`PolicyFailed` and the caller must kill the compiler (LLVM 19
spins forever if its input is merely closed). In extended mode the failure is
sent as an ERROR frame and serving goes on, and so is a request the host
cannot decode (the compiler falls back for that call).

Everything the compiler declares is checked before anything is allocated for
it: specs (bounded shapes, unique names) and sizes (each tensor, and one
message, within ``max_bytes``: :func:`mlbridge.limits.check_schema`).

The policy contract (``Policy``, ``Session``, ``as_decision_fn``, the checks
of an answer) is every transport's: :mod:`mlbridge.policy`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from mlbridge.channel import HostEnds, Watch, open_host_ends
from mlbridge.codecs import FORMATS, get_codec
from mlbridge.codecs.base import Codec, ScalarEncoder
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, EndOfStream, MlbridgeError
from mlbridge.framing import (
    CONTEXT,
    ERROR,
    HEADER,
    OBSERVATION,
    RESULT,
    FrameKind,
    frame_bytes,
    read_frame,
)
from mlbridge.jsontext import load_json
from mlbridge.limits import DEFAULT_MAX_BYTES, MAX_HEADER_LINE, BudgetError, check_schema
from mlbridge.policy import (
    Policy,
    Session,
    as_decision_fn,
    output_arrays,
    output_bytes,
    scalar_packer,
    takes_context,
)
from mlbridge.shared_memory import (
    SPIN_ALLOWED,
    Decisions,
    SharedMemoryError,
    SharedRegion,
    check_platform,
    region_path,
    serve_shared,
    spin_allowed,
)
from mlbridge.tensor_spec import SpecError, TensorSpec, specs_from_json
from mlbridge.training_log import TrainingLogWriter

_MAX_EVENT_LINE = 1 << 20
_OBS_PREFIX = b'{"observation":'
_MAX_REFUSAL_CHARS = 4096  # at most 6 bytes each as JSON: the reply line stays < 64 KiB
_MAX_CPUS = 1 << 16
#: The extended handshake's format value of the shm protocol.
SHM_FORMAT = "shm"
#: One decision in 8 is timed for HostStats.reply_seconds (the first, the 9th,
#: ...): timing every one cost ~0.3 us, 4% of a FIFO round trip.
_UNTIMED_MASK = 7


class ProtocolError(MlbridgeError):
    """The compiler sent something the protocol does not allow."""


class PolicyFailed(MlbridgeError):
    """The policy raised (or returned an unusable value) in mlgo mode."""


@dataclass
class HostStats:
    """Counters of one served session."""

    mode: str = ""
    decisions: int = 0
    contexts: int = 0
    errors_reported: int = 0  #: ERROR frames sent (extended mode)
    #: CPU time the serving thread spent on the session (reading, decoding,
    #: the policy, encoding, writing, logging); waits for the compiler excluded.
    host_seconds: float = 0.0
    #: wall time from "request fully read" to "reply written" (the compiler's
    #: wait on the host, including time the OS ran other processes), summed
    #: over the timed decisions: one in 8, starting with the first.
    timed_reply_seconds: float = 0.0
    timed_decisions: int = 0
    outputs: List[str] = field(default_factory=list)

    @property
    def host_seconds_per_decision(self) -> float:
        """Mean host CPU time per decision (0 when there was none)."""
        return self.host_seconds / self.decisions if self.decisions else 0.0

    @property
    def reply_seconds_per_decision(self) -> float:
        """Mean wall time from request read to reply written, over the timed
        decisions (0 when there was none)."""
        timed = self.timed_decisions
        return self.timed_reply_seconds / timed if timed else 0.0

    @property
    def reply_seconds(self) -> float:
        """Estimated total wall time from requests read to replies written
        (the timed decisions' mean times the decisions)."""
        return self.reply_seconds_per_decision * self.decisions

    def add_reply_time(self, seconds: float) -> None:
        """Count one timed decision's wall time from request to reply."""
        self.timed_reply_seconds += seconds
        self.timed_decisions += 1

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-friendly summary."""
        return {
            "mode": self.mode,
            "decisions": self.decisions,
            "contexts": self.contexts,
            "errors_reported": self.errors_reported,
            "host_seconds": self.host_seconds,
            "host_seconds_per_decision": self.host_seconds_per_decision,
            "reply_seconds_per_decision": self.reply_seconds_per_decision,
        }


class PipeHost:
    """Serves one policy over pipe channels, one session per :meth:`serve`.

    ``io_timeout`` bounds each wait for the compiler's next message (None: wait
    as long as ``watch()`` says the compiler lives); ``open_timeout`` bounds
    the wait for the compiler to open the channel. ``log``, a binary stream,
    receives an LLVM training log of the features with the decision appended
    as the last feature(s). ``max_requests`` stops serving after that many
    decisions. ``max_bytes`` bounds every message read.

    ``patch`` (mlgo mode only) is called with *writable* views of every
    observation's features as soon as they are read, before the policy sees
    them and before they are logged: it may repair what a compiler sends
    (see :mod:`mlbridge.llvm.advisors`, LLVM 19's include-default bug).
    """

    def __init__(
        self,
        policy: Policy,
        *,
        open_timeout: Optional[float] = None,
        io_timeout: Optional[float] = None,
        log: Optional[BinaryIO] = None,
        max_requests: Optional[int] = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        patch: Optional[Callable[[Dict[str, np.ndarray]], None]] = None,
    ) -> None:
        self.policy = policy
        self._decide = as_decision_fn(policy)
        self.open_timeout = open_timeout
        self.io_timeout = io_timeout
        self.log = log
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.patch = patch

    def serve(self, base: str, watch: Watch = None) -> HostStats:
        """Open the channel at ``base`` (protocol order), serve until EOF, close.

        ``watch()`` returning False (e.g. the compiler exited) aborts the open
        with :class:`mlbridge.channel.PeerGone`.
        """
        with open_host_ends(base, self.open_timeout, self.io_timeout, watch) as ends:
            return self.serve_ends(ends)

    def serve_ends(self, ends: HostEnds, stats: Optional[HostStats] = None) -> HostStats:
        """Serve a session on already-open ends until the compiler closes them.

        ``stats`` (a fresh one by default) is updated as decisions are made,
        so it stays meaningful when an error is raised. The ends are not
        closed: on an error the caller decides (kill the compiler first, then
        close, to avoid LLVM 19's busy loop).
        """
        if stats is None:
            stats = HostStats()
        cpu_start = time.thread_time()
        try:
            first = ends.reader.readline(MAX_HEADER_LINE)
            if not first:
                return stats  # opened and closed without a word
            header = _parse_line(first, "header")
            if "mlbridge" in header:
                stats.mode = "extended"
                self._serve_extended(ends, header, stats)
            elif "features" in header and "advice" in header:
                stats.mode = "mlgo"
                self._serve_mlgo(ends, header, stats)
            else:
                raise ProtocolError(
                    f"unrecognised header line {first[:100]!r}: expected "
                    f'a "mlbridge" handshake or LLVM\'s '
                    f'{{"features":...,"advice":...}}'
                )
            return stats
        finally:
            stats.host_seconds += time.thread_time() - cpu_start

    # -- shared helpers --------------------------------------------------

    def _begin(self, session: Session) -> Optional[TrainingLogWriter]:
        begin = getattr(self.policy, "begin", None)
        if callable(begin):
            begin(session)
        if self.log is None:
            return None
        return TrainingLogWriter(self.log, list(session.features) + list(session.outputs))

    # -- LLVM's mlgo mode -------------------------------------------------

    def _serve_mlgo(self, ends: HostEnds, header: Dict[str, Any], stats: HostStats) -> None:
        session = _mlgo_session(header, self.max_bytes)
        features, advice = session.features, session.outputs[0]
        stats.outputs = [advice.name]
        total = sum(s.nbytes for s in features)
        tensors = TensorBuffer(features, trailing=1)  # the record ends with "\n"
        buf, target = tensors.buffer, tensors.memory
        views, writable = tensors.views, tensors.writable
        patch = self.patch
        logger = self._begin(session)
        fast = scalar_packer(advice)
        read_record = ends.reader.read_record
        readline, readinto, write = ends.reader.readline, ends.reader.readinto, ends.writer.write
        policy, with_context = self.policy, takes_context(self.policy)
        perf_counter, start = time.perf_counter, 0.0
        size, context = len(buf), ""
        line: Optional[bytes] = None
        decisions, limit = 0, -1 if self.max_requests is None else self.max_requests
        try:
            while decisions != limit:
                if read_record(_OBS_PREFIX, target):  # the whole record was there
                    line = None
                else:  # the general path: any line, then its bytes
                    line = readline(_MAX_EVENT_LINE)
                    if not line:
                        return
                    if not (line.startswith(_OBS_PREFIX) and line.endswith(b"}\n")):
                        context = self._mlgo_context(line, stats, logger)
                        continue
                    got = readinto(target)
                    if got != size or buf[-1] != 0x0A:
                        number = _observation_number(line)
                        if got != size:
                            raise ProtocolError(
                                f"observation {number}: the compiler closed after "
                                f"{got} of {size} bytes"
                            )
                        raise ProtocolError(
                            f"observation {number}: the {total} feature bytes "
                            f"are not followed by a newline"
                        )
                timed = not decisions & _UNTIMED_MASK
                if timed:
                    start = perf_counter()
                if patch is not None:
                    patch(writable)
                try:
                    value = policy(views, context=context) if with_context else policy(views)
                    reply = fast(value) if fast is not None else None
                    if reply is None:
                        reply = output_bytes(advice, value)
                except Exception as err:
                    if line is None:
                        line = ends.reader.last_record_line()
                    raise PolicyFailed(
                        f"policy failed on observation {_observation_number(line)} "
                        f"of context {context!r}: {type(err).__name__}: "
                        f"{err}"
                    ) from err
                write(reply)
                if logger is not None:
                    if not logger.in_context:
                        # A peer that names no context (mlbridge's runner,
                        # e.g. the LLVM 16 plugin): the empty one, as
                        # LLVM's interactive runner sends.
                        logger.context("")
                    logger.observation(bytes(target[:total]) + reply)
                decisions += 1
                if timed:
                    stats.add_reply_time(perf_counter() - start)
        finally:
            stats.decisions += decisions

    @staticmethod
    def _mlgo_context(line: bytes, stats: HostStats, logger: Optional[TrainingLogWriter]) -> str:
        """Handle a non-observation line of mlgo mode: it must be a context."""
        if not line.endswith(b"\n"):
            raise ProtocolError(f"truncated line from the compiler: {line[:100]!r}")
        event = _parse_line(line, "event")
        if "context" not in event or not isinstance(event["context"], str):
            raise ProtocolError(f"expected a context or observation line, got {line[:100]!r}")
        stats.contexts += 1
        if logger is not None:
            logger.context(event["context"])
        return event["context"]

    # -- extended mode ----------------------------------------------------

    def _serve_extended(self, ends: HostEnds, header: Dict[str, Any], stats: HostStats) -> None:
        writer = ends.writer
        if header.get("format") == SHM_FORMAT:
            self._serve_shared(ends, header, stats)
            return
        try:
            session = _extended_session(header, self.max_bytes)
        except ProtocolError as err:
            _refuse(writer, err)
            raise
        writer.write(b'{"mlbridge":1}\n')
        codec = get_codec(session.format, self.max_bytes)
        outputs = list(session.outputs)
        stats.outputs = [s.name for s in outputs]
        logger = self._begin(session)
        feature_specs, requests = session.features, TensorBuffer(session.features)
        # The steady state: a frame read in place, decoded into the session's
        # buffer, the reply made from a template and written with one write().
        replies = _Replies(codec, outputs, scalars=logger is None)
        scalar, encode = replies.scalar, replies.encode
        next_frame = _frame_source(ends.reader)
        decode, decide, write = codec.decode_request, self._decide, writer.write
        perf_counter, max_bytes, start = time.perf_counter, self.max_bytes, 0.0
        context, answer, result = "", {}, b""
        decisions, limit = 0, -1 if self.max_requests is None else self.max_requests
        try:
            while decisions != limit:
                try:
                    kind, payload = next_frame(max_bytes)
                except EndOfStream:
                    return
                if kind != OBSERVATION:
                    if kind != CONTEXT:
                        raise ProtocolError(
                            f"unexpected {FrameKind(kind).name} frame from the compiler"
                        )
                    context = str(payload, "utf-8", "replace")
                    stats.contexts += 1
                    if logger is not None:
                        logger.context(context)
                    continue
                timed = not decisions & _UNTIMED_MASK
                if timed:
                    start = perf_counter()
                try:
                    _, features = decode(payload, feature_specs, requests)
                except CodecError as err:  # the compiler falls back for this call only
                    self._report(write, f"malformed request: {err}", stats)
                    continue
                try:
                    value = decide(features, context)
                    frame = scalar(value) if scalar is not None else None  # a whole frame
                    if frame is None:
                        answer = output_arrays(outputs, value)
                        result = encode(answer)
                except Exception as err:  # reported to the compiler; serving goes on
                    self._report(write, f"{type(err).__name__}: {err}", stats)
                    continue
                write(frame if frame is not None else frame_bytes(RESULT, result))
                if logger is not None:
                    logger.observation({**features, **answer})
                decisions += 1
                if timed:
                    stats.add_reply_time(perf_counter() - start)
        finally:
            stats.decisions += decisions

    def _serve_shared(self, ends: HostEnds, header: Dict[str, Any], stats: HostStats) -> None:
        """The shm protocol (:mod:`mlbridge.shared_memory`): the extended
        handshake, then decisions through the mapped file."""
        stats.mode = "shm"
        try:
            session = _extended_session(header, self.max_bytes, (SHM_FORMAT,))
            cpus = header.get("cpus")
            if not (
                isinstance(cpus, list)
                and 0 < len(cpus) <= _MAX_CPUS
                and all(type(c) is int and 0 <= c < _MAX_CPUS for c in cpus)
            ):
                raise ProtocolError("bad handshake: 'cpus' must list the compiler's CPUs")
            try:
                check_platform()
                region = SharedRegion.open(
                    region_path(header.get("shm")),
                    session.features,
                    session.outputs,
                    self.max_bytes,
                )
            except SharedMemoryError as err:
                raise ProtocolError(str(err)) from err
        except ProtocolError as err:
            _refuse(ends.writer, err)
            raise
        try:
            spin = spin_allowed(cpus)
            region.words[SPIN_ALLOWED // 4] = int(spin)  # before the reply: read after it
            ends.writer.write(b'{"mlbridge":1}\n')
            outputs = list(session.outputs)
            stats.outputs = [s.name for s in outputs]
            logger = self._begin(session)
            limit = -1 if self.max_requests is None else self.max_requests
            decisions = Decisions(self._decide, outputs, logger, limit)
            serve_shared(region, ends, session.features, decisions, stats, spin)
        finally:
            region.close()

    @staticmethod
    def _report(write: Callable[[bytes], Any], message: str, stats: HostStats) -> None:
        """Answer the current request with an ERROR frame carrying ``message``.

        Nothing of the failed request reaches the policy or the log: a decode
        that fails half-way may have written some tensors into the session's
        buffer, and the next request that decodes rewrites every one of them.
        """
        write(frame_bytes(ERROR, message.encode("utf-8", "replace")))
        stats.errors_reported += 1


class _Replies:
    """How the extended mode encodes a session's replies.

    ``encode(answer)`` is the payload for checked arrays
    (:func:`mlbridge.policy.output_arrays`), from the codec's reply template.
    ``scalar`` (None unless ``scalars`` and the outputs are one ``int64_t``,
    ``int32_t``, ``float`` or ``double`` element) is the whole RESULT frame for
    a scalar answer, or None for an answer it cannot encode (the general path
    then checks it and reports what is wrong).
    """

    def __init__(self, codec: Codec, outputs: List[TensorSpec], scalars: bool) -> None:
        template = codec.reply_template(outputs)
        self.scalar: Optional[ScalarEncoder] = None
        if template is None:  # the codec's own encoder (it checks the values again)
            self.encode: Callable[[Dict[str, np.ndarray]], bytes] = partial(
                codec.encode_reply, outputs
            )
            return
        self.encode = lambda answer: template.encode(list(answer.values()))
        if not scalars:
            return
        if template.size is not None:  # the frame header is constant too
            self.scalar = template.scalar_encoder(HEADER.pack(template.size, RESULT))
            return
        body = template.scalar_encoder()
        if body is not None:
            self.scalar = partial(_framed_result, body)


def _framed_result(body: ScalarEncoder, value: Any) -> Optional[bytes]:
    """The RESULT frame of ``body(value)``; None when that is None."""
    payload = body(value)
    return None if payload is None else HEADER.pack(len(payload), RESULT) + payload


def _frame_source(reader: Any) -> Callable[[int], Tuple[int, Any]]:
    """``read(max_bytes)`` -> (kind, payload) for the compiler's frames: in
    place from an :class:`FdReader`, else with :func:`read_frame`."""
    in_place = getattr(reader, "read_frame", None)
    return in_place if in_place is not None else partial(read_frame, reader)


def _parse_line(line: bytes, what: str) -> Dict[str, Any]:
    """A header or event line from the compiler: a JSON object, else ProtocolError."""
    return load_json(line, f"bad {what} line {line[:100]!r}", ProtocolError)


def _observation_number(line: bytes) -> Optional[int]:
    """n of a canonical ``{"observation":n}\\n`` line (fast path), else None."""
    if not line.startswith(_OBS_PREFIX):
        return None
    try:
        return int(line[len(_OBS_PREFIX) : line.rindex(b"}")])
    except ValueError:
        return None


def _declared_specs(header: Mapping[str, Any], key: str, what: str) -> List[TensorSpec]:
    """The spec list ``header[key]`` (bounded shapes, unique names), else ProtocolError."""
    try:
        return specs_from_json(header.get(key), key)
    except SpecError as err:
        raise ProtocolError(f"{what}: {err}") from None


def _check_sizes(session: Session, max_bytes: int, what: str, extra: int = 0) -> Session:
    """``session`` when one request and one reply each fit ``max_bytes``.

    ``extra`` bytes of framing follow the features (mlgo's newline). Checked
    before any buffer is made: a tensor too large to be received is refused
    with its name rather than allocated.
    """
    try:
        check_schema(session.features, max_bytes, f"{what}: features", extra)
        check_schema(session.outputs, max_bytes, f"{what}: outputs")
    except BudgetError as err:
        raise ProtocolError(str(err)) from err
    return session


def _mlgo_session(header: Mapping[str, Any], max_bytes: int) -> Session:
    """The session LLVM's mlgo header declares, checked; else ProtocolError."""
    features = _declared_specs(header, "features", "bad mlgo header")
    try:
        advice = TensorSpec.from_json(header.get("advice"))
    except SpecError as err:
        raise ProtocolError(f"bad mlgo header: advice: {err}") from None
    return _check_sizes(Session("mlgo", features, [advice]), max_bytes, "bad mlgo header", extra=1)


def _refuse(writer: Any, err: ProtocolError) -> None:
    """Answer a handshake with a refusal naming ``err``."""
    # The compiler reads at most 64 KiB: bound what a peer's names make of it.
    reply = {"mlbridge": 1, "error": str(err)[:_MAX_REFUSAL_CHARS]}
    writer.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")


def _extended_session(
    header: Mapping[str, Any], max_bytes: int, formats: Sequence[str] = FORMATS
) -> Session:
    """The session an extended handshake declares, checked; else ProtocolError."""
    version = header.get("mlbridge")
    if version != 1:
        raise ProtocolError(
            f"unsupported mlbridge protocol version {version!r} (this host speaks 1)"
        )
    fmt = header.get("format")
    if not isinstance(fmt, str) or fmt not in formats:
        raise ProtocolError(
            f"unknown format {fmt!r}; expected one of {', '.join(FORMATS + (SHM_FORMAT,))}"
        )
    features = _declared_specs(header, "features", "bad handshake")
    outputs = _declared_specs(header, "outputs", "bad handshake")
    if not outputs:
        raise ProtocolError("bad handshake: no outputs declared")
    return _check_sizes(Session("extended", features, outputs, fmt), max_bytes, "bad handshake")


__all__ = [
    "HostStats",
    "PipeHost",
    "PolicyFailed",
    "ProtocolError",
]

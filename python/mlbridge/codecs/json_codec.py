"""The json format: one canonical JSON object per message (docs/protocol.md)."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from mlbridge.codecs.base import Codec, Tensors
from mlbridge.codecs.schema import SchemaMatcher, arrays_for, check_payload_size
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, ModelError
from mlbridge.jsontext import format_array, load_json, quote_string
from mlbridge.tensor_spec import TensorSpec

_UINT64_LIMIT = 1 << 64
_NEGATIVE_ZERO_TOKEN = re.compile(rb"-0(?![0-9.eE])")


class _NegativeZero(int):
    """The JSON token ``-0``: the integer 0, but -0.0 in a float tensor."""


def _parse_int(text: str) -> int:
    return _NegativeZero(0) if text == "-0" else int(text)


class JsonCodec(Codec):
    """``{"observation":N,"tensors":[{"name","type","shape","data"}...]}``.

    Encoders write the canonical text byte for byte; decoders accept any valid
    JSON with these keys (any order, whitespace, unknown keys ignored).
    """

    name = "json"

    def encode_request(
        self, observation: int, specs: Sequence[TensorSpec], tensors: Tensors
    ) -> bytes:
        if (
            not isinstance(observation, (int, np.integer))
            or isinstance(observation, bool)
            or not 0 <= observation < _UINT64_LIMIT
        ):
            raise CodecError(
                f"json request: observation must be an integer in [0, 2^64), got {observation!r}"
            )
        body = _tensors_text(specs, arrays_for(specs, tensors, "json request"))
        return f'{{"observation":{int(observation)},"tensors":[{body}]}}'.encode()

    def decode_request(
        self, payload: bytes, specs: Sequence[TensorSpec], into: Optional[TensorBuffer] = None
    ) -> Tuple[int, Dict[str, np.ndarray]]:
        what = "json request"
        obj = self._load(payload, what)
        observation = obj.get("observation")
        if (
            not isinstance(observation, int)
            or isinstance(observation, bool)
            or not 0 <= observation < _UINT64_LIMIT
        ):
            raise CodecError(
                f"json request: 'observation' must be an integer in [0, 2^64), got {observation!r}"
            )
        matcher = into.matcher(what) if into is not None else SchemaMatcher(specs, what)
        return int(observation), _decode_tensors(payload, obj, matcher, what)

    def encode_reply(self, specs: Sequence[TensorSpec], tensors: Tensors) -> bytes:
        body = _tensors_text(specs, arrays_for(specs, tensors, "json reply"))
        return f'{{"tensors":[{body}]}}'.encode()

    def decode_reply(self, payload: bytes, specs: Sequence[TensorSpec]) -> Dict[str, np.ndarray]:
        obj = self._load(payload, "json reply")
        error = obj.get("error")
        if error is not None:
            if not isinstance(error, str):
                raise CodecError(f"json reply: 'error' must be a string, got {error!r}")
            if error:
                raise ModelError(error)
        return _decode_tensors(payload, obj, SchemaMatcher(specs, "json reply"), "json reply")

    def encode_error(self, message: str) -> bytes:
        """``{"error":"<message>"}``: a reply reporting a model-side failure."""
        return f'{{"error":{quote_string(str(message) or "unknown error")}}}'.encode()

    def _load(self, payload: bytes, what: str) -> Dict[str, Any]:
        check_payload_size(payload, self.max_bytes, what)
        if isinstance(payload, memoryview):
            payload = bytes(payload)
        # json reads the token -0 as the integer 0; keep its sign (slow path).
        hook = _parse_int if _NEGATIVE_ZERO_TOKEN.search(payload) else None
        return load_json(payload, what, CodecError, parse_int=hook)


def _tensors_text(specs: Sequence[TensorSpec], arrays: List[np.ndarray]) -> str:
    """The canonical text of the tensor objects, comma-separated."""
    return ",".join(
        f'{{"name":{quote_string(spec.name)},"type":"{spec.type_name}",'
        f'"shape":[{",".join(map(str, spec.shape))}],"data":[{format_array(arr)}]}}'
        for spec, arr in zip(specs, arrays)
    )


def _decode_tensors(
    payload: bytes, obj: Mapping[str, Any], matcher: SchemaMatcher, what: str
) -> Dict[str, np.ndarray]:
    items = obj.get("tensors")
    if not isinstance(items, list):
        raise CodecError(f"{what}: 'tensors' must be a list, got {type(items).__name__}")
    groups: Dict[str, List[_Member]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise CodecError(f"{what}: tensors[{index}] must be an object")
        fields = [item.get(key) for key in ("name", "type", "shape", "data")]
        if any(value is None for value in fields):
            missing = [k for k, v in zip(("name", "type", "shape", "data"), fields) if v is None]
            raise CodecError(f"{what}: tensor '{item.get('name', index)}' lacks key '{missing[0]}'")
        name, type_name, shape, data = fields
        if not isinstance(shape, list):
            raise CodecError(f"{what}: tensor '{name}': 'shape' must be a list")
        spec = matcher.spec_for(name, str(type_name), shape)
        if not isinstance(data, list) or len(data) != spec.element_count:
            got = f"{len(data)} values" if isinstance(data, list) else type(data).__name__
            raise CodecError(
                f"{what}: tensor '{name}': 'data' must be a flat list of "
                f"{spec.element_count} values, got {got}"
            )
        groups.setdefault(spec.type_name, []).append((spec, data, index))
    # Convert each element type in one go: numpy calls cost per call, and
    # messages often hold many small tensors of one type.
    for members in groups.values():
        for spec, values in _convert_group(payload, members, what):
            matcher.add(spec, values)
    return matcher.finish()


_Member = Tuple[TensorSpec, List[Any], int]


def _convert_group(
    payload: bytes, members: List[_Member], what: str
) -> List[Tuple[TensorSpec, np.ndarray]]:
    """The values of tensors of one element type, converted together."""
    if len(members) > 1:
        combined = [x for _, data, _ in members for x in data]
        try:
            values = _values(members[0][0], combined, what)
        except CodecError:
            values = None  # redo one by one so that the error names the tensor
        if values is not None:
            if members[0][0].type_name == "float":
                values = _to_float32(
                    values,
                    lambda: [x for _, _, index in members for x in _reparse_data(payload, index)],
                    what,
                )
            out, offset = [], 0
            for spec, data, _ in members:
                out.append((spec, values[offset : offset + len(data)]))
                offset += len(data)
            return out
    out = []
    for spec, data, index in members:
        values = _values(spec, data, what)
        if spec.type_name == "float":
            values = _to_float32(values, lambda: _reparse_data(payload, index), what)
        out.append((spec, values))
    return out


def _values(spec: TensorSpec, data: List[Any], what: str) -> np.ndarray:
    """``data`` as an array: float64 for float types, the exact dtype otherwise."""
    kinds = set(map(type, data))
    negative_zeros = _NegativeZero in kinds
    if negative_zeros:
        kinds.discard(_NegativeZero)
        kinds.add(int)
    if spec.dtype.kind == "f":
        if not kinds <= {int, float}:
            bad = next(k for k in kinds if k not in (int, float))
            raise CodecError(
                f"{what}: tensor '{spec.name}': {spec.type_name} values "
                f"must be JSON numbers, got {bad.__name__}"
            )
        try:
            values = np.array(data, dtype=np.float64)
        except OverflowError:
            raise CodecError(
                f"{what}: tensor '{spec.name}': an integer value is out "
                f"of range for {spec.type_name}"
            ) from None
        if negative_zeros:
            values[[type(x) is _NegativeZero for x in data]] = -0.0
        return values
    if not kinds <= {int}:
        bad = next(k for k in kinds if k is not int)
        raise CodecError(
            f"{what}: tensor '{spec.name}': {spec.type_name} values must "
            f"be JSON integers, got {bad.__name__}"
        )
    if data:
        info = np.iinfo(spec.dtype)
        low, high = min(data), max(data)
        if low < info.min or high > info.max:
            culprit = low if low < info.min else high
            raise CodecError(
                f"{what}: tensor '{spec.name}': value {culprit} is out of "
                f"range for {spec.type_name}"
            )
    return np.array(data, dtype=spec.dtype)


def _to_float32(doubles: np.ndarray, exact_data: Callable[[], List[Any]], what: str) -> np.ndarray:
    """Round decimals (read as float64) to float32 without double rounding.

    Reading a decimal as float64 and rounding that to float32 is wrong only
    when the float64 lands exactly on a midpoint between two float32s; those
    rare elements are re-rounded from the exact decimal text (``exact_data``:
    the numbers as JSON wrote them, see :func:`_reparse_data`).
    """
    # One errstate for all the steps (entering one costs as much as the
    # steps): overflow to infinity is the correct rounding here.
    with np.errstate(over="ignore", invalid="ignore"):
        singles = doubles.astype(np.float32)
        back = singles.astype(np.float64)
        inexact = (back != doubles) & np.isfinite(singles)
        if not inexact.any():
            return singles
        toward = np.where(doubles > back, np.float32(np.inf), np.float32(-np.inf))
        neighbour = np.nextafter(singles, toward.astype(np.float32)).astype(np.float64)
        gap = np.abs(neighbour - doubles) == np.abs(doubles - back)
    ties = np.flatnonzero(inexact & gap)
    if ties.size:
        exact = exact_data()
        for i in ties:
            decimal = _exact(exact[i], what)
            midpoint = Decimal(float(doubles[i]))  # exact; Decimal comparisons are exact
            if decimal != midpoint and (decimal > midpoint) == (neighbour[i] > back[i]):
                singles[i] = np.float32(neighbour[i])
    return singles


def _reparse_data(payload: bytes, index: int) -> List[Any]:
    """The data of tensors[index] with each decimal kept as its text (rare slow
    path: the payload was parsed once already, so this cannot fail)."""
    obj = load_json(bytes(payload), "json payload", CodecError, parse_float=str)
    return obj["tensors"][index]["data"]


def _exact(number: Any, what: str) -> Decimal:
    """The exact value of a JSON number (an int, or a decimal's text).

    Decimal, not Fraction: a Fraction of ``1e-99999999`` computes a
    100-million-digit power of ten, Decimal keeps the exponent.
    """
    try:
        return Decimal(number)
    except InvalidOperation:  # an exponent beyond what decimal represents
        raise CodecError(
            f"{what}: the number {str(number)[:40]} cannot be rounded to float exactly"
        ) from None

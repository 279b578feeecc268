"""The json format: one canonical JSON object per message (docs/protocol.md)."""

from __future__ import annotations

import functools
import json
import re
import struct
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import orjson

from mlbridge.codecs.base import Codec, ReplyTemplate, Tensors
from mlbridge.codecs.schema import SchemaMatcher, arrays_for, check_payload_size
from mlbridge.codecs.tensor_buffer import TensorBuffer
from mlbridge.errors import CodecError, ModelError
from mlbridge.jsontext import float_formatter, format_array, load_json, quote_string
from mlbridge.tensor_spec import TensorSpec

_UINT64_LIMIT = 1 << 64
_NEGATIVE_ZERO_TOKEN = re.compile(rb"-0(?![0-9.eE])")
#: The numbers of a tensor of one element, of several (counted after the
#: match: a counted pattern is slower), of none, in a canonical message: no
#: space, bracket, brace or quote.
_ONE_NUMBER, _NUMBERS, _NO_NUMBER = rb"([-+.0-9A-Za-z]+)", rb"([-+.,0-9A-Za-z]*)", rb"()"


class _NegativeZero(int):
    """The JSON token ``-0``: the integer 0, but -0.0 in a float tensor."""


def _parse_int(text: str) -> int:
    return _NegativeZero(0) if text == "-0" else int(text)


def _scanner(**options: Any) -> Callable[[str, int], Tuple[Any, int]]:
    """json's own scanner (what json.loads runs): ``scan(text, 0)`` is
    (value, end) of the JSON value at the start of ``text``."""
    decoder: Any = json.JSONDecoder(**options)
    return decoder.scan_once


_SCAN = _scanner()
_SCAN_NEGATIVE_ZERO = _scanner(parse_int=_parse_int)  # keeps the sign of the token -0


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
        pieces = _message_pieces(specs, f'{{"observation":{int(observation)},')
        return _splice(pieces, map(format_array, arrays_for(specs, tensors, "json request")))

    def decode_request(
        self, payload: bytes, specs: Sequence[TensorSpec], into: Optional[TensorBuffer] = None
    ) -> Tuple[int, Dict[str, np.ndarray]]:
        what = "json request"
        if into is not None:
            check_payload_size(payload, self.max_bytes, what)
            layout = into.layouts.get(self.name)
            if layout is None:
                layout = into.layouts[self.name] = CanonicalRequests(into)
            observation = layout.decode(payload, what)
            if observation is not None:
                return observation, into.views
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
        arrays = arrays_for(specs, tensors, "json reply")
        return _splice(_message_pieces(specs, "{"), map(format_array, arrays))

    def reply_template(self, specs: Sequence[TensorSpec]) -> Optional[ReplyTemplate]:
        """The text around each tensor's numbers, encoded once. None when a
        name cannot be encoded (a lone surrogate): :meth:`encode_reply` then
        raises per reply, as it always did."""
        try:
            pieces = [piece.encode() for piece in _message_pieces(specs, "{")]
        except UnicodeEncodeError:
            return None
        return ReplyTemplate(specs, pieces, _array_text, _scalar_text)

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


def _message_pieces(specs: Sequence[TensorSpec], lead: str) -> List[str]:
    """The canonical text of a message around each tensor's numbers.

    ``lead`` opens the object (``{`` or ``{"observation":N,``); the tensors
    follow in schema order. ``len(specs) + 1`` pieces: see :func:`_splice`.
    """
    heads = [
        f'{{"name":{quote_string(spec.name)},"type":"{spec.type_name}",'
        f'"shape":[{",".join(map(str, spec.shape))}],"data":['
        for spec in specs
    ]
    if not heads:
        return [lead + '"tensors":[]}']
    return [f'{lead}"tensors":[{heads[0]}'] + ["]}," + head for head in heads[1:]] + ["]}]}"]


def _splice(pieces: Sequence[str], texts: Any) -> bytes:
    """``pieces`` with each tensor's numbers (``texts``) between them, encoded."""
    parts = [pieces[0]]
    for text, piece in zip(texts, pieces[1:]):
        parts.append(text)
        parts.append(piece)
    return "".join(parts).encode()


def _array_text(arr: np.ndarray) -> bytes:
    """The canonical numbers of a checked array, encoded."""
    return format_array(arr).encode()


def _scalar_text(spec: TensorSpec) -> Callable[[bytes], bytes]:
    """The canonical number of a one-element tensor of ``spec`` from its raw
    little-endian bytes (what :func:`format_array` writes for it)."""
    if spec.dtype.kind == "f":
        unpack = struct.Struct("<f" if spec.dtype.itemsize == 4 else "<d").unpack
        formatter = float_formatter(spec.dtype)
        return lambda raw: formatter(unpack(raw)[0]).encode()
    signed = spec.dtype.kind == "i"
    return lambda raw: str(int.from_bytes(raw, "little", signed=signed)).encode()


class CanonicalRequests:
    """Fast path for canonical json requests of the schema of a TensorBuffer.

    A canonical request (what the encoders, C++ and Python, write) is the
    constant text of the schema with the observation and each tensor's
    numbers in between. A payload that matches it exactly is decoded by
    parsing only the numbers, all tensors at once, and converting each run of
    tensors of one type in one step; anything else (another layout, a count
    or value the general path refuses) returns None and the general path
    decodes it, so the result and every error are the general path's.
    """

    def __init__(self, into: TensorBuffer) -> None:
        specs = into.specs
        self._counts = [spec.element_count for spec in specs]
        self._pattern: Optional[re.Pattern[bytes]] = None
        try:
            pieces = [re.escape(p.encode()) for p in _message_pieces(specs, "")]
            # The observation, then each tensor's numbers.
            numbers = [
                _NUMBERS if count > 1 else _ONE_NUMBER if count else _NO_NUMBER
                for count in self._counts
            ]
            self._pattern = re.compile(
                b"".join(
                    [rb'\{"observation":(0|[1-9][0-9]{0,19}),', pieces[0]]
                    + [part for pair in zip(numbers, pieces[1:]) for part in pair]
                )
            )
        except UnicodeEncodeError:  # a lone surrogate in a name: no canonical form
            pass
        self._empty = 0 in self._counts
        self._several = [(i, n) for i, n in enumerate(self._counts) if n > 1]
        # Tensors grouped by element type (in order of first appearance, like
        # the general path), each group with its elements' place in the list
        # of all numbers and a flat writable view of the buffer per tensor or,
        # for tensors adjacent in the schema, one view of all of them.
        starts = np.cumsum([0] + self._counts).tolist()
        offsets = np.cumsum([0] + [spec.nbytes for spec in specs]).tolist()
        by_type: Dict[str, List[int]] = {}
        for index, spec in enumerate(specs):
            by_type.setdefault(spec.type_name, []).append(index)
        self._groups: List[Tuple[TensorSpec, List[int], List[Tuple[int, int, np.ndarray]]]] = []
        for indices in by_type.values():
            spec = specs[indices[0]]
            runs = [[indices[0]]]
            for index in indices[1:]:
                if index == runs[-1][-1] + 1:
                    runs[-1].append(index)
                else:
                    runs.append([index])
            places = [
                (
                    starts[run[0]],
                    starts[run[-1] + 1],
                    np.frombuffer(
                        into.buffer,
                        spec.dtype,
                        starts[run[-1] + 1] - starts[run[0]],
                        offsets[run[0]],
                    ),
                )
                for run in runs
            ]
            self._groups.append((spec, indices, places))
        # Float tensors of one run: packed as float64s and cast in one step.
        self._packed = [
            _PackedFloats(places[0][2]) if spec.type_name == "float" and len(places) == 1 else None
            for spec, _, places in self._groups
        ]
        # All numbers go to packed float tensors: orjson may read them.
        self._all_packed: Optional[List[Tuple[int, int, _PackedFloats]]] = None
        if self._groups and _orjson_reads_exactly() and None not in self._packed:
            self._all_packed = [
                (places[0][0], places[0][1], packed)
                for (_, _, places), packed in zip(self._groups, self._packed)
                if packed is not None
            ]
        self._total = sum(self._counts)

    def decode(self, payload: bytes, what: str) -> Optional[int]:
        """Decode a canonical ``payload`` into the buffer and return its
        observation; None (having maybe written some tensors) otherwise."""
        match = None if self._pattern is None else self._pattern.fullmatch(payload)
        if match is None:
            return None
        observation = int(match.group(1))
        if observation >= _UINT64_LIMIT:
            return None
        texts = match.groups()[1:]
        # One tensor's count is checked by orjson's reading (its length) or
        # before json's scan; several tensors' before either.
        several = len(texts) > 1
        if several:
            if not self._counts_agree(texts):
                return None
            numbers_text = b",".join(filter(None, texts) if self._empty else texts)
        else:
            numbers_text = texts[0]
        # The token -0 ends at a comma or the end: its other followers are
        # digits, '.', 'e' and 'E' (a number) or make the text invalid JSON.
        negative_zero = b"-0," in numbers_text or numbers_text.endswith(b"-0")
        scan = _SCAN_NEGATIVE_ZERO if negative_zero else _SCAN
        # Only ints and floats (no -0 token, no word) may be packed. The words
        # json reads are true, false, null, NaN and Infinity: each has a u, a or
        # n (memchr-fast tests; a regex scan of the text cost 3x more).
        numbers_only = not (
            negative_zero or b"u" in numbers_text or b"a" in numbers_text or b"n" in numbers_text
        )
        if numbers_only and self._all_packed is not None and self._read_packed(numbers_text):
            return observation
        if not several and not self._counts_agree(texts):
            return None
        try:
            numbers, end = scan(f"[{numbers_text.decode('ascii')}]", 0)
            if end != len(numbers_text) + 2:
                return None
            for (spec, indices, places), packed in zip(self._groups, self._packed):
                if packed is not None and numbers_only:
                    start, end, _ = places[0]
                    if packed.convert(numbers[start:end]):
                        continue
                if len(places) == 1:
                    start, end, target = places[0]
                    combined = numbers[start:end]
                else:
                    combined = [x for start, end, _ in places for x in numbers[start:end]]
                values = _group_values(payload, spec, indices, combined, what)
                done = 0
                for start, end, target in places:
                    target[...] = values[done : done + end - start]
                    done += end - start
        except (StopIteration, ValueError, CodecError):  # bad numbers, a value out of range...
            return None
        return observation

    def _counts_agree(self, texts: Sequence[bytes]) -> bool:
        """Whether each tensor's text holds as many numbers as its spec."""
        return all(texts[index].count(b",") + 1 == count for index, count in self._several)

    def _read_packed(self, numbers_text: bytes) -> bool:
        """Read ``numbers_text`` (numbers only: no word, no token -0) with
        orjson into the packed float tensors; False (maybe having written
        some) when orjson refuses it (an overflow, say), the count is not the
        tensors' or a value needs the general conversion. orjson's ints are
        exact and its floats correctly rounded (:func:`_orjson_reads_exactly`),
        so the float64s packed are json's; an integer beyond 64 bits comes as
        its correctly rounded float64, which is what packing json's int gives.
        """
        assert self._all_packed is not None
        try:
            numbers = orjson.loads(b"[" + numbers_text + b"]")
        except orjson.JSONDecodeError:
            return False
        if len(numbers) != self._total:  # one tensor's count, unchecked so far
            return False
        for start, end, packed in self._all_packed:
            if not packed.convert(numbers[start:end]):
                return False
        return True


@functools.lru_cache(maxsize=None)
def _orjson_reads_exactly() -> bool:
    """Whether orjson reads JSON numbers into the float64s json's do: floats
    correctly rounded (a parser built without an exact fallback misreads
    some long decimals by one unit in the last place), integers exactly or,
    beyond 64 bits, as their correctly rounded float64. Checked once, on
    decimals near halfway between two float64s or two float32s and on
    pseudo-random long decimals over the float32 range."""
    texts = [
        "9007199254740993",
        "18446744073709551615",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "2.2250738585072011e-308",
        "4.9e-324",
        "2.4703282292062327208828439643411068618252990130716238221279284125e-324",
        "1.7976931348623157e308",
        "8.98846567431157953864652595394512366e307",
        "0.1",
        "3.4028235677973366e38",
        "1.00000005960464477550",
        "1.00000011920928955078125",
        "7.0064923216240854e-46",
        "1.448997445238699e-38",
        "5.9604644775390625e-8",
        "9007199254740992.9999999999999999999",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
    ]
    state = 12345
    for _ in range(400):
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        digits = f"{state % 10**19:019d}"
        sign = "-" if state & 1 else ""
        texts.append(f"{sign}{digits[0]}.{digits[1:]}e{state % 80 - 40}")
    text = f"[{','.join(texts)}]"
    try:
        read = orjson.loads(text.encode())
    except orjson.JSONDecodeError:
        return False
    expected = json.loads(text)
    doubles = struct.Struct(f"<{len(expected)}d")
    return len(read) == len(expected) and doubles.pack(*read) == doubles.pack(*expected)


class _PackedFloats:
    """Float32 tensor data from a list of JSON ints and floats, exactly as
    :func:`_values` and :func:`_to_float32` make it, with fewer steps: the
    numbers packed as float64s into a scratch buffer, the fast path's test
    made on their bits (:class:`_PlainBits`), one cast into ``target``.
    """

    def __init__(self, target: np.ndarray) -> None:
        count = target.size
        self._target = target
        self._struct = struct.Struct(f"<{count}d")
        self._scratch = bytearray(8 * count)
        self._doubles = np.frombuffer(self._scratch, np.float64)
        self._plain = _PlainBits(count)

    def convert(self, numbers: List[Any]) -> bool:
        """Write ``numbers`` (ints and floats only) into the target; False
        (nothing written) when the cast alone may not round them right or an
        integer overflows a float64: the general conversion decides then."""
        try:
            self._struct.pack_into(self._scratch, 0, *numbers)
        except struct.error:  # an integer beyond float64's range
            return False
        if not self._plain(int.from_bytes(self._scratch, "little")):
            return False
        self._target[...] = self._doubles
        return True


def _lanes(value: int, count: int) -> int:
    """``value`` in each of ``count`` 64-bit lanes of one integer."""
    return int.from_bytes(value.to_bytes(8, "little") * count, "little")


class _PlainBits:
    """The test of :func:`_to_float32`'s fast path (every element of a
    plain exponent, none a float32 midpoint) for ``count`` float64s given as
    one integer, element i in bits 64i..64i+63 (``int.from_bytes`` of their
    little-endian bytes). Each step works on all 64-bit lanes at once: a few
    big-integer operations instead of eight numpy calls. No step carries out
    of a lane: each adds a constant to a lane value that leaves the lane's
    top bit (or, for the midpoint test, bit 29) as the answer.
    """

    def __init__(self, count: int) -> None:
        self._dropped = _lanes((1 << 29) - 1, count)  # the bits float32 drops
        self._midpoint = _lanes(1 << 28, count)
        self._bit29 = _lanes(1 << 29, count)
        self._magnitude = _lanes((1 << 63) - 1, count)
        self._top = _lanes(1 << 63, count)
        # magnitude + each: the top bit set when the magnitude is >= 2^-126
        # (float32's least normal), >= 2^127 (rounds to float32's infinity
        # or beyond), >= 2^-1022 (not a zero or float64 subnormal).
        self._from_normal = _lanes((1 << 63) - ((1023 - 126) << 52), count)
        self._from_too_big = _lanes((1 << 63) - ((1023 + 127) << 52), count)
        self._from_nonzero = _lanes((1 << 63) - (1 << 52), count)

    def __call__(self, bits: int) -> bool:
        # The dropped bits xor the midpoint's are zero exactly on a midpoint;
        # adding 2^29 - 1 sets bit 29 in every other lane.
        if ((bits & self._dropped) ^ self._midpoint) + self._dropped & self._bit29 != self._bit29:
            return False
        magnitude = bits & self._magnitude
        normal = magnitude + self._from_normal
        too_big = magnitude + self._from_too_big
        nonzero = magnitude + self._from_nonzero
        # A lane is refused when nonzero and (not normal or too big).
        return not nonzero & ((normal ^ self._top) | too_big) & self._top


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


def _group_values(
    payload: bytes, spec: TensorSpec, indices: Sequence[int], combined: List[Any], what: str
) -> np.ndarray:
    """The values of tensors[indices] of a message, all of ``spec``'s element
    type, converted together; ``combined`` is their data, concatenated."""
    return _declared(payload, spec, indices, _values(spec, combined, what), what)


def _declared(
    payload: bytes, spec: TensorSpec, indices: Sequence[int], values: np.ndarray, what: str
) -> np.ndarray:
    """``values`` from :func:`_values` in ``spec``'s element type (float32
    rounding needs the exact numbers of tensors[indices] on a tie)."""
    if spec.type_name != "float":
        return values
    return _to_float32(
        values, lambda: [x for index in indices for x in _reparse_data(payload, index)], what
    )


_Member = Tuple[TensorSpec, List[Any], int]


def _convert_group(
    payload: bytes, members: List[_Member], what: str
) -> List[Tuple[TensorSpec, np.ndarray]]:
    """The values of tensors of one element type, converted together."""
    if len(members) > 1:
        combined = [x for _, data, _ in members for x in data]
        indices = [index for _, _, index in members]
        try:
            values = _values(members[0][0], combined, what)
        except CodecError:
            values = None  # redo one by one so that the error names the tensor
        if values is not None:
            values = _declared(payload, members[0][0], indices, values, what)
            out, offset = [], 0
            for spec, data, _ in members:
                out.append((spec, values[offset : offset + len(data)]))
                offset += len(data)
            return out
    return [
        (spec, _group_values(payload, spec, [index], data, what)) for spec, data, index in members
    ]


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


def _plain_exponents() -> np.ndarray:
    """Which float64s (indexed by their top 12 bits: sign and exponent)
    :func:`_to_float32` may simply cast: zeros and float64 subnormals (they
    round to a signed zero), magnitudes in [2^-126, 2^127) (float32 normals:
    no overflow, and a midpoint between two float32s shows in the mantissa).
    Not infinities and NaNs: a signalling NaN would raise "invalid"."""
    plain = np.zeros(1 << 12, bool)
    for sign in (0, 1 << 11):
        plain[sign] = True
        plain[sign + 1023 - 126 : sign + 1023 + 127] = True
    plain.flags.writeable = False
    return plain


_PLAIN_EXPONENTS = _plain_exponents()
_EXPONENT_SHIFT = np.int64(52)  # of the int64 view: a negative index is the sign's half
#: A float64 of a plain exponent is a midpoint between two float32s exactly
#: when the 29 mantissa bits float32 drops are 1 followed by 28 zeros.
_DROPPED_BITS = np.uint64((1 << 29) - 1)
_MIDPOINT_BITS = np.uint64(1 << 28)


def _to_float32(doubles: np.ndarray, exact_data: Callable[[], List[Any]], what: str) -> np.ndarray:
    """Round decimals (read as float64) to float32 without double rounding.

    Reading a decimal as float64 and rounding that to float32 is wrong only
    when the float64 lands exactly on a midpoint between two float32s; those
    rare elements are re-rounded from the exact decimal text (``exact_data``:
    the numbers as JSON wrote them, see :func:`_reparse_data`).

    Fast path: when no element is a midpoint (read from the bits) nor in a
    range where the cast could overflow or round to a float32 subnormal (nor
    infinite or NaN), the cast alone gives what :func:`_to_float32_resolving_ties` gives, without
    its floating-point state changes and a dozen array passes.
    """
    bits = doubles.view(np.uint64)
    count_nonzero = np.count_nonzero
    if count_nonzero(
        _PLAIN_EXPONENTS[doubles.view(np.int64) >> _EXPONENT_SHIFT]
    ) == bits.size and not count_nonzero((bits & _DROPPED_BITS) == _MIDPOINT_BITS):
        return doubles.astype(np.float32)
    return _to_float32_resolving_ties(doubles, exact_data, what)


def _to_float32_resolving_ties(
    doubles: np.ndarray, exact_data: Callable[[], List[Any]], what: str
) -> np.ndarray:
    """:func:`_to_float32` for any float64s (the general path)."""
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

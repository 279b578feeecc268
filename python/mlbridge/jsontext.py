"""Canonical JSON text pieces shared by the JSON codec and the training log.

Floats are written exactly as C++17 ``std::to_chars(first, last, value)``
writes them: the shortest digits that read back to the same value of the
value's own type, in fixed or scientific notation, whichever is shorter
(fixed on a tie). Like ``printf("%.0f")``, a fixed-notation integer is written
with its exact digits (``123456792`` for the float32 nearest 123456789).
Non-finite values are the bare tokens ``NaN``, ``Infinity`` and ``-Infinity``.

Strings are quoted like LLVM's ``llvm::json``: UTF-8 passes through, ``"`` and
``\\`` are backslash-escaped, ``\\t`` ``\\n`` ``\\r`` use short escapes and the
other control characters ``\\u00XX`` (lowercase hex).

:func:`load_json` parses JSON text from a peer (a compiler, a model, a log
file): it raises only the caller's mlbridge error class and refuses nesting
deeper than :data:`MAX_JSON_DEPTH` before the recursive parser sees it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Dict, Tuple, Type, Union

import numpy as np

from mlbridge.errors import CodecError, MlbridgeError

_F32_EXACT_INT = float(1 << 24)  # below this every float32 integer is exact
_F64_EXACT_INT = float(1 << 53)  # below this every float64 integer is exact
_SAFE_STRING = re.compile(r'[^"\\\x00-\x1f]*\Z')
_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", '"': '\\"', "\\": "\\\\"}

#: Deepest nesting of arrays and objects accepted in a peer's JSON. mlbridge's
#: documents need 4 levels. CPython's parser recurses once per level: deeper
#: input raises RecursionError, or overflows the C stack (a crash) when a
#: program has raised ``sys.setrecursionlimit``.
MAX_JSON_DEPTH = 512

_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_LEVEL_STEP = np.zeros(256, np.int64)
_LEVEL_STEP[list(b"[{")] = 1
_LEVEL_STEP[list(b"]}")] = -1
_QUOTE = ord('"')
_DEPTH_CHUNK = 1 << 20


def quote_string(text: str) -> str:
    """Return ``text`` as a JSON string literal, quoted the way LLVM does."""
    if _SAFE_STRING.match(text):
        return f'"{text}"'
    out = []
    for ch in text:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _special(value: float) -> str:
    """Text of NaN, infinities and zeros (the values with no digits)."""
    if value != value:
        return "NaN"
    if value == 0.0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    return "Infinity" if value > 0 else "-Infinity"


def _parse_digits(text: str) -> Tuple[str, int]:
    """Split a positive finite decimal ('1.25e-07', '0.001', '12.5') into
    (significant digits without leading/trailing zeros, scientific exponent)."""
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    int_part = int_part.lstrip("0")
    if int_part:
        return (int_part + frac_part).rstrip("0"), exponent + len(int_part) - 1
    stripped = frac_part.lstrip("0")
    return stripped.rstrip("0"), exponent - (len(frac_part) - len(stripped)) - 1


def _layout(negative: bool, digits: str, exponent: int, value: float) -> str:
    """Choose fixed or scientific notation for shortest ``digits`` x 10^exponent."""
    n = len(digits)
    exp_len = 2 if -100 < exponent < 100 else 3
    sci_len = n + (n > 1) + 2 + exp_len
    if exponent >= n - 1:  # an integer: digits then zeros
        fixed_len = exponent + 1
    elif exponent >= 0:  # a decimal point inside the digits
        fixed_len = n + 1
    else:  # 0.000ddd
        fixed_len = n + 1 - exponent
    sign = "-" if negative else ""
    if fixed_len <= sci_len:
        if exponent >= n - 1:
            # Same length as digits + zeros, and exact (what %.0f prints).
            return sign + str(int(abs(value)))
        if exponent >= 0:
            return f"{sign}{digits[: exponent + 1]}.{digits[exponent + 1 :]}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    mantissa = digits if n == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _integer(value: float) -> str:
    """Text of an exactly representable small integral float (fast path)."""
    text = str(int(value))
    digits = text.lstrip("-")
    trailing = len(digits) - len(digits.rstrip("0"))
    if trailing <= 4:  # fixed can only lose against e.g. 1e+05 from 5 zeros on
        return text
    n = len(digits) - trailing
    return _layout(value < 0, digits[:n], len(digits) - 1, value)


def format_float64(value: float) -> str:
    """Canonical text of a float64 (``std::to_chars`` shortest form)."""
    if value != value or value == 0.0 or value in (math.inf, -math.inf):
        return _special(value)
    if value.is_integer() and -_F64_EXACT_INT < value < _F64_EXACT_INT:
        return _integer(value)
    text = repr(value)
    negative = text[0] == "-"
    digits, exponent = _parse_digits(text[1:] if negative else text)
    return _layout(negative, digits, exponent, value)


def format_float32(value: float) -> str:
    """Canonical text of a float32 given as a Python float holding it exactly.

    The digits are the shortest that identify the value among float32s.
    """
    if value != value or value == 0.0 or value in (math.inf, -math.inf):
        return _special(value)
    if value.is_integer() and -_F32_EXACT_INT < value < _F32_EXACT_INT:
        return _integer(value)
    text = np.format_float_scientific(np.float32(value), unique=True, trim="-")
    negative = text[0] == "-"
    digits, exponent = _parse_digits(text[1:] if negative else text)
    return _layout(negative, digits, exponent, value)


def float_formatter(dtype: np.dtype) -> Callable[[float], str]:
    """The formatter for float32 or float64 elements."""
    return format_float32 if np.dtype(dtype).itemsize == 4 else format_float64


def format_array(arr: np.ndarray) -> str:
    """Comma-separated canonical text of every element of ``arr`` (row-major)."""
    values = arr.ravel().tolist()
    if arr.dtype.kind == "f":
        return ",".join(map(float_formatter(arr.dtype), values))
    return ",".join(map(str, values))


def load_json(
    data: Union[bytes, bytearray],
    what: str,
    error: Type[MlbridgeError] = CodecError,
    **options: Any,
) -> Dict[str, Any]:
    """Parse untrusted JSON text that must hold an object, or raise ``error``.

    ``what`` names the text in the message (``"json request"``, ``"bad header
    line b'...'"``). Invalid JSON, bad UTF-8, numbers Python refuses and
    nesting deeper than :data:`MAX_JSON_DEPTH` all raise ``error``, never
    anything else. ``options`` go to :func:`json.loads` (e.g. ``parse_int``).
    """
    obj = load_json_value(data, what, error, **options)
    if not isinstance(obj, dict):
        raise error(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def load_json_value(
    data: Union[bytes, bytearray],
    what: str,
    error: Type[MlbridgeError] = CodecError,
    **options: Any,
) -> Any:
    """:func:`load_json` for text holding any JSON value (an array...)."""
    try:
        # Cheap bound first: the nesting cannot exceed the number of brackets.
        if (
            data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH
            and _nesting_depth(data, MAX_JSON_DEPTH) > MAX_JSON_DEPTH
        ):
            raise RecursionError
        obj = json.loads(data, **options)
    except RecursionError:
        raise error(f"{what}: invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, huge integers
        raise error(f"{what}: invalid JSON: {err}") from None
    return obj


def _nesting_depth(data: Union[bytes, bytearray], limit: int) -> int:
    """The deepest nesting of ``[``/``{`` outside strings, at least up to
    ``limit`` (scanning stops once it is exceeded).

    For every prefix that is valid JSON this is the parser's own depth, so it
    bounds how deep the parser can recurse. Vectorised: escapes are removed,
    then only quotes and brackets are kept and counted with numpy, in chunks
    (bounded memory).
    """
    encoding = json.detect_encoding(data)
    if not encoding.startswith("utf-8"):  # UTF-16/32 text: count characters, not bytes
        data = data.decode(encoding, "surrogatepass").encode("utf-8", "surrogatepass")
    if b"\\" in data:
        # Escaped backslashes first, then escaped quotes: what is left of a
        # string is its two delimiting quotes and characters that do not matter.
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    codes = np.frombuffer(data.translate(None, _NOT_STRUCTURE), np.uint8)
    depth = deepest = quotes = 0
    for start in range(0, codes.size, _DEPTH_CHUNK):
        part = codes[start : start + _DEPTH_CHUNK]
        inside = (np.cumsum(part == _QUOTE) + quotes) & 1  # 1: within a string
        levels = np.cumsum(_LEVEL_STEP[part] * (1 - inside)) + depth
        deepest = max(deepest, int(levels.max()))
        if deepest > limit:
            break
        depth, quotes = int(levels[-1]), int(inside[-1])
    return deepest

"""C++ spelling helpers: identifiers, string literals, exact constant arrays."""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np

_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char16_t char32_t class compl const constexpr const_cast continue decltype
default delete do double dynamic_cast else enum explicit export extern false
float for friend goto if inline int long mutable namespace new noexcept not
not_eq nullptr operator or or_eq private protected public register
reinterpret_cast return short signed sizeof static static_assert static_cast
struct switch template this thread_local throw true try typedef typeid
typename union unsigned using virtual void volatile wchar_t while xor xor_eq
""".split())


def identifier(text: str) -> str:
    """A valid C++ identifier derived from ``text`` (e.g. an ONNX tensor name)."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", text)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    ident = re.sub(r"__+", "_", ident)
    if ident in _KEYWORDS:
        ident += "_"
    return ident


def is_identifier(text: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][0-9A-Za-z_]*", text)) and text not in _KEYWORDS


def string_literal(text: str) -> str:
    """A C++ string literal for ``text`` (ASCII escapes, UTF-8 bytes as \\x)."""
    out = []
    for b in text.encode():
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= b < 127 and c != "?":
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def float_literal(x: float) -> str:
    """The exact float32 value as a C++ literal (hexadecimal floating point)."""
    x = float(np.float32(x))
    if np.isnan(x):
        return "kNaN"
    if np.isinf(x):
        return "kInf" if x > 0 else "-kInf"
    if x == 0.0:
        return "-0.0f" if np.signbit(x) else "0.0f"
    mantissa, exponent = x.hex().split("p")
    return mantissa.rstrip("0").rstrip(".") + "p" + exponent + "f"


def int64_literal(x: int) -> str:
    x = int(x)
    if x == -(2 ** 63):
        return "std::numeric_limits<std::int64_t>::min()"
    return f"{x}LL" if abs(x) > 2 ** 31 else str(x)


def literals(arr: np.ndarray) -> Iterable[str]:
    flat = np.asarray(arr).reshape(-1)
    if flat.dtype == np.float32:
        return (float_literal(x) for x in flat.tolist())
    return (int64_literal(x) for x in flat.tolist())


def array_body(arr: np.ndarray, per_line: int = 6) -> str:
    """The brace-enclosed initializer of ``arr``, a few values per line."""
    items = list(literals(arr))
    if not items:
        return "{}"
    rows = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n    " + ",\n    ".join(rows) + "}"

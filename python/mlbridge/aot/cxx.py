"""C++ spelling helpers: identifiers, comments, string literals, exact
constant arrays.

Every string a model provides (tensor, node and graph names, file names...)
reaches generated code through exactly one of three doors: :func:`comment`
(inside any comment), :func:`string_literal` (inside a string literal) or
:func:`unique_identifier` (a name derived from it, never the text itself).
"""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np

_KEYWORDS = frozenset(
    """
alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char16_t char32_t class compl const constexpr const_cast continue decltype
default delete do double dynamic_cast else enum explicit export extern false
float for friend goto if inline int long mutable namespace new noexcept not
not_eq nullptr operator or or_eq private protected public register
reinterpret_cast return short signed sizeof static static_assert static_cast
struct switch template this thread_local throw true try typedef typeid
typename union unsigned using virtual void volatile wchar_t while xor xor_eq
""".split()
)


#: Alignment of every generated buffer and constant, in bytes (cache lines,
#: and the dense kernels' vector loads).
ALIGN = 64

#: Longest identifier derived from a model's name (before a uniqueness suffix).
IDENTIFIER_LIMIT = 64

#: Longest rendering of untrusted text in a comment (longer text is cut).
COMMENT_LIMIT = 120


def aligned_size(nbytes: int) -> int:
    """Bytes a buffer of ``nbytes`` takes when aligned (one unit if empty)."""
    return (max(nbytes, 1) + ALIGN - 1) // ALIGN * ALIGN


def identifier(text: str) -> str:
    """A valid C++ identifier derived from ``text`` (e.g. an ONNX tensor name)."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", text)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    ident = re.sub(r"__+", "_", ident)
    if ident in _KEYWORDS:
        ident += "_"
    return ident


def unique_identifier(text: str, taken: set) -> str:
    """An identifier derived from untrusted ``text``: ASCII letters, digits
    and single underscores, at most IDENTIFIER_LIMIT characters plus a
    ``_<n>`` suffix when needed to differ from every name in ``taken`` (to
    which it is added). Safe to join with ``_`` to other such parts: it
    neither starts nor ends with an underscore."""
    base = identifier(text)[:IDENTIFIER_LIMIT].strip("_") or "t"
    if base[0].isdigit() or base in _KEYWORDS:
        base = "t_" + base
    ident, n = base, 1
    while ident in taken:
        n += 1
        ident = f"{base}_{n}"
    taken.add(ident)
    return ident


def comment(text: str, limit: int = COMMENT_LIMIT) -> str:
    """Untrusted ``text`` rendered for the inside of any comment (``//``,
    ``///`` or ``/* */``): printable ASCII only, on one line, never ending
    in a backslash, with no ``*/``, ``/*`` or ``??`` (a trigraph), cut after
    ``limit`` characters, and padded with a space where it starts or ends
    with ``*``, ``/`` or ``?``. Other characters (newlines, backslashes,
    control and non-ASCII characters) are spelled ``<U+XXXX>``."""
    out: list = []
    for c in text[:limit]:
        if c == "\\" or not " " <= c <= "~":
            out.append(f"<U+{ord(c):04X}>")
            continue
        if out and out[-1][-1:] + c in ("*/", "/*", "??"):
            out.append(" ")
        out.append(c)
    if len(text) > limit:
        out.append(f"... ({len(text) - limit} more characters)")
    rendered = "".join(out)
    # Whatever surrounds it, no "*/", "/*" or "??" can form across the edges.
    if rendered[:1] in ("*", "/", "?"):
        rendered = " " + rendered
    if rendered[-1:] in ("*", "/", "?"):
        rendered += " "
    return rendered


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
    if x == -(2**63):
        return "std::numeric_limits<std::int64_t>::min()"
    return f"{x}LL" if abs(x) > 2**31 else str(x)


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
    rows = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n    " + ",\n    ".join(rows) + "}"

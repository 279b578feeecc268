"""The constants of a generated model: inline C++ arrays, or binary data.

Operators ask :class:`ConstantPool` for constants while the run function is
emitted; each gets a symbol ``kConst<n>`` (a pointer to its elements). When
all of them take at most ``inline_limit`` bytes
(:data:`DEFAULT_INLINE_LIMIT`) they become C++ arrays in the source, exact to
the bit (hexadecimal floats): portable to any C++17 compiler. Otherwise they
are written as raw bytes to ``<stem>.weights.bin``, which the source pulls in
with the assembler's ``.incbin`` (GCC or Clang, ELF targets): compiling
megabytes of weights then costs no more than compiling kilobytes.

The weights file holds every constant at a 64-byte aligned offset (the dense
kernels use aligned vector loads), the float32 ones then the int64 ones, then
the SHA-256 of those bytes. The source declares each region as an extern
array of its element type defined by the assembly block (a hidden symbol
derived from the model's C symbol) and each constant as a pointer into it,
refuses at assembly time a file longer than expected (``.org``),
checks the digest when a model object is constructed (a shorter or other
file makes ``Run()`` fail) and carries the digest in its text, so that build
systems recompile the source whenever the weights change. The C++ of those
declarations and of the assembly block is in the templates ``weights.cpp.in``,
``weights_check.cpp.in`` and ``weights_asm.cpp.in`` (:mod:`mlbridge.aot.templates`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from mlbridge.aot import cxx, templates
from mlbridge.aot.errors import AotError
from mlbridge.aot.ir import CXX_TYPES

#: Constants totalling at most this many bytes are C++ arrays in the source.
DEFAULT_INLINE_LIMIT = 64 << 10


def incbin_path(path: Path) -> str:
    """The absolute path of ``path`` for an assembler string, or AotError:
    the assembler knows no escapes we could rely on, so quotes, backslashes
    and control characters are refused rather than escaped."""
    text = str(Path(path).resolve())
    bad = [c for c in text if c in '"\\' or ord(c) < 32 or ord(c) == 127]
    if bad:
        raise AotError(
            f"the weights file '{cxx.comment(text, 1000)}' cannot be "
            f"referenced from assembly: its path contains {bad[0]!r}; "
            "write the generated files to another directory"
        )
    return text


@dataclass
class WeightsFile:
    """The constants of a model as bytes, and the assembly defining them."""

    #: Contents: the constants, then their SHA-256.
    data: bytes
    #: Assembly lines before and after the ``.incbin`` of the file.
    before: List[str]
    after: List[str]

    def asm(self, path: str) -> str:
        """The C++ ``asm`` declaration pulling the file at ``path`` in: a path
        from :func:`incbin_path`, or the bare file name for a build that puts
        its directory on the include path (GCC and Clang pass ``-I`` to the
        assembler; link-time optimisation does not)."""
        lines = self.before + [f'.incbin "{path}"\n'] + self.after
        return templates.fill(
            "weights_asm.cpp.in",
            file_name=cxx.comment(Path(path).name),
            size=len(self.data),
            lines="\n    ".join(cxx.string_literal(line) for line in lines),
        )


@dataclass
class _Region:
    """The constants of one element type in the weights file: an extern array."""

    symbol: str  #: the array's (assembly) symbol
    ctype: str  #: its C++ element type
    start: int  #: its byte offset in the file
    nbytes: int  #: its size, padding included
    elements: int  #: its size in elements
    #: (symbol, array, hint, element offset in the region) of each constant.
    constants: List[Tuple[str, np.ndarray, str, int]]


class ConstantPool:
    """Constant arrays of one model, in the order operators asked for them."""

    def __init__(self) -> None:
        self._items: List[Tuple[str, np.ndarray, str]] = []  # (symbol, array, hint)

    def add(self, arr: np.ndarray, hint: str) -> str:
        """Embeds ``arr`` (float32 or int64; int32 and bool are widened);
        returns its symbol, a pointer to its elements."""
        arr = np.asarray(arr)
        if arr.dtype == np.int32 or arr.dtype == np.bool_:
            arr = arr.astype(np.int64)
        if arr.dtype not in CXX_TYPES:
            raise AotError(
                f"constant '{hint}' has element type {arr.dtype.name}, "
                "which mlbridge-aot cannot embed (float32, int64)"
            )
        sym = f"kConst{len(self._items) + 1}"
        self._items.append((sym, np.ascontiguousarray(arr), hint))
        return sym

    @property
    def nbytes(self) -> int:
        """Bytes the constants take (aligned as they are laid out)."""
        return sum(cxx.aligned_size(arr.nbytes) for _, arr, _ in self._items)

    def inline_decls(self) -> str:
        """The constants as C++ arrays (for the anonymous namespace)."""
        return "\n\n".join(
            f"{self._comment(hint, arr)}\nalignas(64) const {CXX_TYPES[arr.dtype]} "
            f"{sym}[{max(arr.size, 1)}] = {cxx.array_body(arr)};"
            for sym, arr, hint in self._items
        )

    def _regions(self, c_symbol: str) -> Tuple[List[_Region], bytes]:
        """The layout of the weights file: one region per element type
        (float32, then int64), each constant 64-byte aligned; and the bytes."""
        blob = bytearray()
        regions = []
        for dtype, t in CXX_TYPES.items():
            items = [(sym, arr, hint) for sym, arr, hint in self._items if arr.dtype == dtype]
            if not items:
                continue
            start, placed = len(blob), []
            for sym, arr, hint in items:
                placed.append((sym, arr, hint, (len(blob) - start) // dtype.itemsize))
                blob += arr.tobytes() + bytes(cxx.aligned_size(arr.nbytes) - arr.nbytes)
            nbytes = len(blob) - start
            regions.append(
                _Region(
                    f"{c_symbol}_{dtype.name}", t, start, nbytes, nbytes // dtype.itemsize, placed
                )
            )
        return regions, bytes(blob)

    def weights_file(self, c_symbol: str) -> Tuple[WeightsFile, str]:
        """(the weights file, the C++ declarations of its symbols, before the
        anonymous namespace). The file holds one region per element type
        (float32, then int64), each an extern array; a constant is a pointer
        into its region. ``c_symbol`` (an identifier unique to the model)
        prefixes every assembly symbol. The declarations define
        ``weightsMatch()``, to check when a model object is constructed, and
        ``runWithOtherWeights``, a run function failing with an explanation."""
        base = f".L{c_symbol}_weights"
        regions, blob = self._regions(c_symbol)
        digest = hashlib.sha256(blob).digest()
        digest_sym = f"{c_symbol}_weights_sha256"
        externs, aliases, defs = [], [], []
        for region in regions:
            for sym, arr, hint, offset in region.constants:
                aliases.append(
                    f"{self._comment(hint, arr)}\nconstexpr const {region.ctype} "
                    f"*{sym} = {region.symbol} + {offset};"
                )
            externs.append(
                f"extern const {region.ctype} {region.symbol}"
                f"[{region.elements}] MLBRIDGE_AOT_CONSTANT;"
            )
            defs += _asm_object(region.symbol, base, region.start, region.nbytes)
        defs += _asm_object(digest_sym, base, len(blob), len(digest))
        blob += digest
        decls = templates.fill(
            "weights.cpp.in",
            externs="\n".join(externs),
            digest_symbol=digest_sym,
            aliases="\n\n".join(aliases),
            digest=",\n    ".join(
                ", ".join(f"0x{b:02x}" for b in digest[i : i + 16]) for i in (0, 16)
            ),
        )
        before = [
            f'.pushsection .rodata.{c_symbol}_weights,"a"\n',
            f".balign {cxx.ALIGN}\n",
            f"{base}:\n",
        ]
        # A longer file fails to assemble (.org cannot move backwards).
        after = [f".org {base} + {len(blob)}\n"] + defs + [".popsection\n"]
        return WeightsFile(blob, before, after), decls

    @staticmethod
    def _comment(hint: str, arr: np.ndarray) -> str:
        return f"// {cxx.comment(hint)}: {arr.dtype.name} {list(arr.shape)}"


def _asm_object(sym: str, base: str, offset: int, size: int) -> List[str]:
    """Assembly defining the hidden object ``sym`` at ``base + offset``."""
    return [
        f".globl {sym}\n",
        f".hidden {sym}\n",
        f".type {sym}, %object\n",
        f".size {sym}, {size}\n",
        f".set {sym}, {base} + {offset}\n",
    ]


def optional_limit(value: Optional[int]) -> int:
    """The inline limit in force: ``value`` or :data:`DEFAULT_INLINE_LIMIT`."""
    if value is None:
        return DEFAULT_INLINE_LIMIT
    if int(value) < 0:
        raise AotError(f"the inline weights limit must be >= 0 bytes, got {value}")
    return int(value)

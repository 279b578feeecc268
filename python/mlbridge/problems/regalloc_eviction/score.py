"""MLGO's register-allocation score, computed from the allocated code.

LLVM's ``RegAllocScore`` (the reward of MLGO's eviction advisor) is the sum
over a function's blocks of each block's frequency relative to the entry
block times the weighted count of its copies (0.2), loads (4), stores (1),
instructions that both load and store (5), cheap rematerialisable
instructions (0.2) and expensive ones (1). Only a development build of LLVM
computes it; a stock ``llc-19`` does not. mlbridge computes the same sum
from what a stock ``llc-19`` prints:

- the code after register allocation, as MIR text (``-stop-after=
  virtregrewriter``, where LLVM's ``RegAllocScoring`` pass runs);
- each block's frequency, from ``-print-machine-bfi`` on stderr. The
  allocator does not change the control flow, so the last frequencies LLVM
  printed for a function (before its allocation) are those of its allocated
  blocks; they do not depend on the eviction decisions and a compilation
  with the default advisor gives them for every later one of the module.

What MIR text does not say is read as follows (x86-64, documented in
docs/regalloc.md): an instruction loads or stores when its memory operands
say so (``:: (load ...)``, ``(store ...)``); a rematerialisable instruction
is one of x86's constant materialisations (cheap), an ``LEA`` of a symbol or
stack slot without index (cheap), or a load that LLVM marks invariant or
that reads the constant pool or the GOT (expensive). Debug instructions,
``KILL`` and inline assembly count nothing, as in LLVM.

The module is untrusted, and llc prints some of its names raw: blocks and
stack slots in the MIR, functions and blocks in the frequencies. llc runs
with ``--discard-value-names`` (no block, slot or value names), a function
whose name is not printable (a line break would start lines of the module's
choosing) is an error, quoted names are blanked before an instruction is
read, the frequency text must consist of frequency lines only (a diagnostic
may quote the module over several lines) and numbers are read only as long
as LLVM prints them: a module that cannot be measured raises
:class:`ScoreError`, never anything else (docs/security.md).

:func:`default_allocation` runs ``llc-19`` on a module and scores it.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from mlbridge.errors import MlbridgeError
from mlbridge.session import STDERR_TAIL, ToolError, run_tool

#: Largest MIR or frequency text read (a module's allocated code).
MAX_TEXT_BYTES = 512 << 20

#: x86-64 instructions that rematerialise as cheaply as a move: constant
#: materialisations (``isAsCheapAsAMove`` and ``isReMaterializable``).
CHEAP_REMAT = frozenset(
    {
        "MOV8ri",
        "MOV16ri",
        "MOV32ri",
        "MOV32ri64",
        "MOV64ri",
        "MOV64ri32",
        "MOV32r0",
        "MOV32r1",
        "MOV32r_1",
        "MOV32ImmSExti8",
        "MOV64ImmSExti8",
        "V_SET0",
        "V_SETALLONES",
        "AVX_SET0",
        "AVX1_SETALLONES",
        "AVX2_SETALLONES",
        "AVX512_128_SET0",
        "AVX512_256_SET0",
        "AVX512_512_SET0",
        "AVX512_512_SETALLONES",
        "AVX512_FsFLD0SS",
        "AVX512_FsFLD0SD",
        "AVX512_FsFLD0SH",
        "AVX512_FsFLD0F128",
        "FsFLD0SS",
        "FsFLD0SD",
        "FsFLD0SH",
        "FsFLD0F128",
        "MMX_SET0",
    }
)
#: x86-64 address computations, rematerialisable when they address a symbol
#: or a stack slot without an index register.
_LEA = frozenset({"LEA32r", "LEA64r", "LEA64_32r"})
#: Instructions that count nothing (``isDebugInstr``, ``isKill``, ``isInlineAsm``).
_IGNORED = frozenset(
    {
        "DBG_VALUE",
        "DBG_VALUE_LIST",
        "DBG_INSTR_REF",
        "DBG_PHI",
        "DBG_LABEL",
        "KILL",
        "INLINEASM",
        "INLINEASM_BR",
    }
)

_OPCODE = re.compile(r"(?:^|\s)([A-Z][A-Za-z0-9_]*)(?=\s|$|,)")
_MEMOP_WORDS = re.compile(r"\(((?:[a-z][a-z-]*\s+)+)")
_BLOCK = re.compile(r"^  bb\.(\d+)\b")
_FUNCTION = re.compile(r"^name:\s+(.*?)\s*$")
_BFI_FUNCTION = re.compile(r"^block-frequency-info: (.*)$")
# LLVM prints the frequency as a uint64_t (at most 20 digits), then a
# profile count and an irreducible loop header's weight when there are some.
_BFI_BLOCK = re.compile(
    r"^ - BB(\d{1,10})(?:\[.*\])?: float = \S+, int = (\d{1,20})"
    r"(?:, count = \d{1,20})?(?:, irr_loop_header_weight = \d{1,20})? *$"
)
#: A quoted name in MIR (LLVM escapes quotes, backslashes and unprintable
#: characters in it as ``\XX``): blanked before an instruction is read.
_QUOTED = re.compile(r'"[^"\n]*"')
#: Longest block number read (a function has fewer than 10^9 blocks).
_MAX_BLOCK_DIGITS = 9
#: YAML's one-character escapes in a double-quoted scalar.
_YAML_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_YAML_HEX = {"x": 2, "u": 4, "U": 8}


class ScoreError(MlbridgeError):
    """The allocated code or the block frequencies cannot be read."""


@dataclass(frozen=True)
class ScoreWeights:
    """The weight of each kind of instruction (LLVM's defaults)."""

    copy: float = 0.2
    load: float = 4.0
    store: float = 1.0
    cheap_remat: float = 0.2
    expensive_remat: float = 1.0


@dataclass
class RegallocScore:
    """Frequency-weighted counts of one function, or of several summed."""

    copies: float = 0.0
    loads: float = 0.0
    stores: float = 0.0
    load_stores: float = 0.0
    cheap_remats: float = 0.0
    expensive_remats: float = 0.0

    def score(self, weights: ScoreWeights = ScoreWeights()) -> float:
        """The weighted sum (lower is better)."""
        return (
            weights.copy * self.copies
            + weights.load * self.loads
            + weights.store * self.stores
            + (weights.load + weights.store) * self.load_stores
            + weights.cheap_remat * self.cheap_remats
            + weights.expensive_remat * self.expensive_remats
        )

    def __iadd__(self, other: "RegallocScore") -> "RegallocScore":
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def to_dict(self) -> Dict[str, float]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["score"] = self.score()
        return out


def read_text(path: "os.PathLike[str] | str", what: str) -> str:
    """The text of ``path``, refused above :data:`MAX_TEXT_BYTES`."""
    try:
        size = os.stat(path).st_size
        if size > MAX_TEXT_BYTES:
            raise ScoreError(f"{what} {path} has {size} bytes (limit {MAX_TEXT_BYTES})")
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(MAX_TEXT_BYTES + 1)
    except OSError as err:
        raise ScoreError(f"cannot read {what} {path}: {err.strerror or err}") from None


def _yaml_name(raw: str) -> str:
    """A MIR function name as LLVM printed it (plain, or a YAML single- or
    double-quoted scalar on one line); an unknown escape is an error."""
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    if not (len(raw) >= 2 and raw[0] == raw[-1] == '"'):
        return raw
    out: List[str] = []
    text, i = raw[1:-1], 0
    while i < len(text):
        char = text[i]
        i += 1
        if char != "\\":
            out.append(char)
            continue
        escape = text[i : i + 1]
        i += 1
        if escape in _YAML_ESCAPES:
            out.append(_YAML_ESCAPES[escape])
            continue
        digits = text[i : i + _YAML_HEX.get(escape, 0)]
        if not digits or len(digits) != _YAML_HEX[escape] or digits.strip("0123456789abcdefABCDEF"):
            raise ScoreError(f"a machine function's name has an unknown escape: {_quote(raw)}")
        i += len(digits)
        code = int(digits, 16)
        out.append(chr(code) if code <= 0x10FFFF else "\ufffd")
    return "".join(out)


def _quote(text: str, limit: int = 200) -> str:
    """``text`` for an error message: its repr, shortened."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def block_frequencies(text: str) -> Dict[str, Dict[int, float]]:
    """Each function's block frequencies relative to its entry block (the
    first block printed), from ``-print-machine-bfi`` output: the last ones
    printed for each function (LLVM prints them each time a pass computes
    them). The exact integer frequencies are used, not the rounded floats.

    Every line must be a function's header, one of its blocks or empty: any
    other text (a diagnostic, which may quote the module's own strings over
    several lines) is an error, as are numbers longer than LLVM prints. A
    header's name is the rest of its line: the names of the functions scored
    (:func:`function_scores`) are checked to hold no line break."""
    raw: Dict[str, Dict[int, int]] = {}
    current: Optional[Dict[int, int]] = None
    for line in text.split("\n"):
        block = _BFI_BLOCK.match(line)
        if block is not None and current is not None:
            current[int(block.group(1))] = int(block.group(2))
            continue
        function = _BFI_FUNCTION.match(line)
        if function is not None:
            current = raw[function.group(1)] = {}
        elif line.strip():
            raise ScoreError(f"llc printed a line that is no block frequency: {_quote(line)}")
    out: Dict[str, Dict[int, float]] = {}
    for name, blocks in raw.items():
        entry = next(iter(blocks.values()), 0)
        if entry <= 0:
            raise ScoreError(f"{name}: the entry block's frequency is {entry}")
        out[name] = {number: freq / entry for number, freq in blocks.items()}
    return out


def _functions(mir: str) -> Iterator[Tuple[str, str]]:
    """(name, body) of each machine function of a MIR file."""
    for document in re.split(r"^---.*$", mir, flags=re.M):
        head, marker, body = document.partition("\nbody:")
        if not marker:
            continue
        name = None
        for line in head.split("\n"):
            found = _FUNCTION.match(line)
            if found is not None:
                name = _yaml_name(found.group(1))
                break
        if name is None:
            raise ScoreError("a machine function of the MIR has no name")
        if not name.isprintable():
            # llc prints it raw in its block frequencies, where a line break
            # would start lines of the module's choosing
            raise ScoreError(f"a machine function's name is not printable: {_quote(name)}")
        # the first line is the block scalar's indicator ("|")
        yield name, body.split("\n", 1)[-1].split("\n...", 1)[0]


def _classify(line: str) -> Optional[str]:
    """The kind of the instruction on ``line`` (a field of :class:`RegallocScore`),
    or None when it counts nothing."""
    code, _, memops = line.partition(" :: ")
    code = code.split(" debug-location ", 1)[0]
    _, equals, rest = code.rpartition(" = ")
    opcode_match = _OPCODE.search(rest if equals else code)
    if opcode_match is None:
        return None
    opcode = opcode_match.group(1)
    if opcode in _IGNORED:
        return None
    if opcode == "COPY":
        return "copies"
    if opcode in CHEAP_REMAT:
        return "cheap_remats"
    words: Set[str] = set()
    for found in _MEMOP_WORDS.finditer(memops):
        words.update(found.group(1).split())
    loads, stores = "load" in words, "store" in words
    if opcode in _LEA:
        operands = [o.strip() for o in (rest if equals else code)[opcode_match.end() :].split(",")]
        # base, scale, index, displacement, segment
        if len(operands) >= 3 and operands[2] == "$noreg":
            base = operands[0].replace("renamable ", "")
            if base in ("$rip", "$noreg") or base.startswith(("%stack.", "%fixed-stack.")):
                return "cheap_remats"
    if (
        loads
        and not stores
        and ("invariant" in words or "from constant-pool" in memops or "from got" in memops)
    ):
        return "expensive_remats"
    if loads and stores:
        return "load_stores"
    if loads:
        return "loads"
    if stores:
        return "stores"
    return None


def function_scores(mir: str, frequencies: Dict[str, Dict[int, float]]) -> Dict[str, RegallocScore]:
    """The score of each machine function of ``mir`` (MIR text after
    register allocation), its blocks weighted by ``frequencies``
    (:func:`block_frequencies`). A block LLVM gave no frequency is an error:
    the frequencies are not those of this code."""
    out: Dict[str, RegallocScore] = {}
    for name, body in _functions(mir):
        freqs = frequencies.get(name)
        score = RegallocScore()
        freq: Optional[float] = None
        in_bundle = False
        for line in body.split("\n"):
            block = _BLOCK.match(line)
            if block is not None:
                if len(block.group(1)) > _MAX_BLOCK_DIGITS:
                    raise ScoreError(f"{name}: block number {block.group(1)[:20]}...")
                number = int(block.group(1))
                if freqs is None or number not in freqs:
                    raise ScoreError(f"{name}: no block frequency for bb.{number}")
                freq = freqs[number]
                continue
            stripped = line.strip()
            if not line.startswith("    ") or not stripped or stripped.startswith(";"):
                continue
            if stripped.startswith(("successors:", "liveins:")):
                continue
            if in_bundle:
                in_bundle = stripped != "}"
                continue
            if stripped.endswith("{"):
                in_bundle = True  # LLVM counts the bundle, not what it holds
            if freq is None:
                raise ScoreError(f"{name}: an instruction before the first block")
            kind = _classify(_QUOTED.sub('""', stripped))
            if kind is not None:
                setattr(score, kind, getattr(score, kind) + freq)
        out[name] = score
    return out


def module_score(mir: str, frequencies: Dict[str, Dict[int, float]]) -> RegallocScore:
    """The sum of :func:`function_scores`."""
    total = RegallocScore()
    for score in function_scores(mir, frequencies).values():
        total += score
    return total


# -- llc's allocation of a module, scored ------------------------------------
#
# allocation_command stops llc after the allocation's rewriting, where LLVM
# scores an allocation, and writes the allocated code as MIR;
# default_allocation runs it with the default eviction advisor and
# -print-machine-bfi: its score is the baseline, and its block frequencies
# weight every other allocation of the same module (the allocator does not
# change the control flow). The environment and the deployment of a trained
# policy share both.

#: The compiler.
LLC = "llc-19"
#: The pass after which the allocated code is taken (where LLVM scores it).
STOP_AFTER = "virtregrewriter"
#: Options of a module that make llc generate position-independent code.
PIC_FLAGS = frozenset({"-fPIC", "-fpic", "-fPIE", "-fpie"})


#: The first bytes of LLVM bitcode, bare and in its wrapper.
BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")


class AllocationError(MlbridgeError):
    """The default allocation of a module failed or cannot be scored."""


def _beside(llc: str, tool: str) -> str:
    """The LLVM ``tool`` of the same installation as ``llc`` (``llc-19`` ->
    ``llvm-as-19``, ``/usr/lib/llvm-19/bin/llc`` -> ``.../llvm-as``)."""
    path = Path(llc)
    name = tool + path.name[3:] if path.name.startswith("llc") else tool
    return str(path.with_name(name)) if path.parent != Path(".") else name


def llc_input(llc: str, module: Path, workdir: Path, timeout: float) -> Path:
    """``module`` as :func:`allocation_command` gives it to ``llc``: bitcode,
    since llc reads textual IR only with its local names. Bitcode is used as
    it is; textual IR is assembled into ``workdir`` by the ``llvm-as`` of
    ``llc``'s installation (raises :class:`AllocationError`)."""
    try:
        with open(module, "rb") as f:
            magic = f.read(4)
    except OSError as err:
        raise AllocationError(f"cannot read {module}: {err.strerror or err}") from None
    if magic in BITCODE_MAGIC:
        return module
    digest = hashlib.sha256(os.fsencode(os.path.abspath(module))).hexdigest()[:24]
    output = workdir / f"input-{digest}.bc"
    command = [_beside(llc, "llvm-as"), str(module), "-o", str(output)]
    try:
        run_tool(command, timeout=timeout, stdout=subprocess.DEVNULL, error=AllocationError)
    except AllocationError:
        output.unlink(missing_ok=True)
        raise
    return output


def allocation_command(
    llc: str,
    opt_level: int,
    bitcode: Path,
    module_flags: Sequence[str],
    output: Path,
    *extra: str,
) -> List[str]:
    """``llc`` allocating ``bitcode`` (compiled with ``module_flags``) and
    writing the allocated code as MIR to ``output``, the module's local names
    discarded (only its functions' and globals' names remain)."""
    return [
        llc,
        f"-O{opt_level}",
        *_relocation(module_flags),
        # No block, argument or instruction names: llc prints them raw in
        # the MIR and the block frequencies, where a line break in one would
        # start lines of the module's choosing. Code generation ignores them.
        "--discard-value-names",
        f"-stop-after={STOP_AFTER}",
        *extra,
        str(bitcode),
        "-o",
        str(output),
    ]


def object_command(
    llc: str, opt_level: int, mir: Path, module_flags: Sequence[str], output: Path
) -> List[str]:
    """``llc`` finishing the code generation of the allocated code ``mir``
    (what :func:`allocation_command` wrote) into the object file ``output``."""
    return [
        llc,
        f"-O{opt_level}",
        *_relocation(module_flags),
        f"-start-after={STOP_AFTER}",
        "-filetype=obj",
        str(mir),
        "-o",
        str(output),
    ]


def _relocation(module_flags: Sequence[str]) -> List[str]:
    """llc's relocation model for a module compiled with ``module_flags``."""
    return ["-relocation-model=pic"] if PIC_FLAGS & set(module_flags) else []


@dataclass(frozen=True)
class DefaultAllocation:
    """The default advisor's allocation of a module: its score, the block
    frequencies every allocation of the module is weighted by, and how long
    ``llc`` took."""

    score: RegallocScore
    frequencies: Dict[str, Dict[int, float]]
    seconds: float

    def score_of(self, mir: Path) -> RegallocScore:
        """The score of another allocation of the same module (raises
        :class:`~mlbridge.problems.regalloc_eviction.score.ScoreError`)."""
        return module_score(read_text(mir, "the allocated code"), self.frequencies)


def default_allocation(
    llc: str,
    opt_level: int,
    bitcode: Path,
    module_flags: Sequence[str],
    workdir: Path,
    timeout: float,
) -> DefaultAllocation:
    """Allocates ``bitcode`` with the default advisor in ``workdir`` (its
    files removed after) and scores it."""
    output, log = workdir / "default.mir", workdir / "default.bfi"
    command = allocation_command(
        llc, opt_level, bitcode, module_flags, output, "-print-machine-bfi"
    )
    try:
        start = time.monotonic()
        # The block frequencies go to stderr, too long for a pipe's tail.
        with open(log, "wb") as stderr:
            run_tool(
                command,
                timeout=timeout,
                what=f"{llc} with the default advisor",
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        seconds = time.monotonic() - start
        frequencies = block_frequencies(read_text(log, "llc's block frequencies"))
        score = module_score(read_text(output, "the allocated code"), frequencies)
    except ToolError as err:
        tail = (
            "" if err.returncode is None else ": " + read_text(log, "llc's stderr")[-STDERR_TAIL:]
        )
        raise AllocationError(f"{err}{tail}") from None
    except ScoreError as err:
        raise AllocationError(f"the default allocation cannot be scored: {err}") from None
    except OSError as err:
        raise AllocationError(f"cannot write {log}: {err.strerror or err}") from None
    finally:
        output.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
    return DefaultAllocation(score, frequencies, seconds)

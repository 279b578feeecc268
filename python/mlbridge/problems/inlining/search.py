"""Searching one module's inlining decisions for a smaller ``.text`` than
``-Oz``'s own: the labels that imitation of search learns from.

A compilation asks the inliner's questions in order; a *flip set* names the
questions (by their index) whose answer is the opposite of LLVM's own
decision, every other one being LLVM's. Answering by index is a policy like
any other (flipping question ``i`` can change which questions come after
it), and compiling with the same flip set gives the same object.

:func:`search_module` measures LLVM's own decisions (exactly ``-Oz``: the
size cap is lifted as for LLVM's default inliner), then every single flip (or
a random sample of ``budget`` of them), then adds the flips that made the
module smaller one at a time, best first, keeping each that still helps.
The best compilation's :class:`Trace` holds the features of every question
it asked and the answer it gave.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.llvm import INLINING, run_compiler
from mlbridge.llvm.outcomes import CodeBytes, code_bytes
from mlbridge.llvm.versions import LlvmTools, tools
from mlbridge.policy import Session
from mlbridge.problems.inlining import DEFAULT_FEATURE
from mlbridge.problems.inlining.toolchain import OPT_LEVEL

#: Longest one compilation of a search may take (seconds).
COMPILE_TIMEOUT_S = 600.0


class SearchError(MlbridgeError):
    """A compilation of the search failed (its message says why)."""


@dataclass(frozen=True)
class Trace:
    """One compilation: each question's features (rows, in ``names``
    order), LLVM's decision and the answer given, and the object's code."""

    names: Tuple[str, ...]
    features: np.ndarray  # int64 [questions, len(names)]
    defaults: np.ndarray  # int64 [questions]
    decisions: np.ndarray  # int64 [questions]
    code: CodeBytes

    @property
    def text_bytes(self) -> int:
        """The object's ``.text`` (:func:`mlbridge.llvm.outcomes.text_size`)."""
        return self.code.total

    @property
    def questions(self) -> int:
        return len(self.decisions)


class _Flipped:
    """Answers LLVM's decision, flipped at the questions of ``flips``, and
    records every question."""

    wants_default = True
    echoes_default = True  # no size cap: no flip is exactly -Oz

    def __init__(self, flips: FrozenSet[int]) -> None:
        self.flips = flips
        self.names: Tuple[str, ...] = ()
        self.rows: List[List[int]] = []
        self.defaults: List[int] = []
        self.decisions: List[int] = []

    def begin(self, session: Session) -> None:
        self.names = tuple(s.name for s in session.features if s.name != DEFAULT_FEATURE)

    def __call__(self, features: Dict[str, np.ndarray]) -> int:
        default = int(np.asarray(features[DEFAULT_FEATURE]).reshape(-1)[0])
        decision = default ^ 1 if len(self.decisions) in self.flips else default
        self.rows.append([int(np.asarray(features[n]).reshape(-1)[0]) for n in self.names])
        self.defaults.append(default)
        self.decisions.append(decision)
        return decision


def compile_with_flips(
    source: Path,
    flags: Sequence[str],
    flips: FrozenSet[int],
    work: Path,
    llvm: Optional[LlvmTools] = None,
    keep: Optional[Path] = None,
) -> Trace:
    """Compiles ``source`` with ``clang -Oz -c FLAGS`` (of ``llvm``, default
    :func:`mlbridge.llvm.versions.tools`) answering LLVM's decisions flipped
    at ``flips``; the trace of that compilation. The object is written to
    ``keep`` if given, else removed."""
    llvm = llvm or tools()
    obj = keep or work / "search.o"
    policy = _Flipped(flips)
    command = [llvm.clang, OPT_LEVEL, "-c", "-w", *flags, str(source), "-o", str(obj)]
    result = run_compiler(
        command,
        {INLINING: policy},
        include_default=True,
        timeout=COMPILE_TIMEOUT_S,
        io_timeout=COMPILE_TIMEOUT_S,
        llvm=llvm.major,
        plugin=llvm.plugin,
    )
    try:
        if not result.ok:
            why = result.error or (
                f"{llvm.clang} exited with {result.returncode}: {result.stderr.strip()[-500:]}"
            )
            raise SearchError(f"compiling {source} with {len(flips)} flips: {why}")
        code = code_bytes(str(obj))
    finally:
        if keep is None:
            obj.unlink(missing_ok=True)
    width = len(policy.names)
    return Trace(
        policy.names,
        np.asarray(policy.rows, np.int64).reshape(-1, width),
        np.asarray(policy.defaults, np.int64),
        np.asarray(policy.decisions, np.int64),
        code,
    )


@dataclass(frozen=True)
class SearchResult:
    """What :func:`search_module` found: LLVM's own compilation, the best
    one, its flips, the compilations it took, and the ``.text`` of every
    single flip tried (by question index)."""

    default: Trace
    best: Trace
    flips: FrozenSet[int]
    compilations: int
    single_text: Dict[int, int] = field(default_factory=dict)

    def single_deltas(self) -> np.ndarray:
        """Per question of the default compilation: its single flip's
        ``.text`` minus ``-Oz``'s, or 0 where it was not tried (int64)."""
        deltas = np.zeros(self.default.questions, np.int64)
        for i, size in self.single_text.items():
            deltas[i] = size - self.default.text_bytes
        return deltas

    def tried(self) -> np.ndarray:
        """Per question of the default compilation: whether its single flip
        was compiled (bool)."""
        mask = np.zeros(self.default.questions, bool)
        mask[list(self.single_text)] = True
        return mask

    @property
    def ratio(self) -> float:
        """Best ``.text`` / ``-Oz``'s (1.0 for an empty one)."""
        return self.best.text_bytes / self.default.text_bytes if self.default.text_bytes else 1.0


Compile = Callable[[Path, Sequence[str], FrozenSet[int], Path], Trace]


def search_module(
    source: Path,
    flags: Sequence[str],
    budget: int = 200,
    seed: int = 0,
    work: Optional[Path] = None,
    compile: Compile = compile_with_flips,
) -> SearchResult:
    """Single flips (all, or ``budget`` drawn at random), then the improving
    ones added greedily; see the module's docstring. ``compile`` compiles
    with a flip set (:func:`compile_with_flips`)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        where = Path(tmp)
        default = compile(source, flags, frozenset(), where)
        compilations = 1
        questions = list(range(default.questions))
        if len(questions) > budget:
            questions = sorted(rng.sample(questions, budget))
        singles: Dict[int, Trace] = {}
        single_text: Dict[int, int] = {}
        for i in questions:
            trace = compile(source, flags, frozenset({i}), where)
            compilations += 1
            single_text[i] = trace.text_bytes
            if trace.text_bytes < default.text_bytes:
                singles[i] = trace
        best, flips = default, frozenset[int]()
        for i in sorted(singles, key=lambda i: (singles[i].text_bytes, i)):
            candidate = flips | {i}
            if flips:
                trace = compile(source, flags, candidate, where)
                compilations += 1
            else:
                trace = singles[i]  # the best single flip, compiled already
            if trace.text_bytes < best.text_bytes:
                best, flips = trace, candidate
    return SearchResult(default, best, flips, compilations, single_text)

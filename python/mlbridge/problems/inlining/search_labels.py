"""Searching every translation unit of a corpus split
(:func:`~mlbridge.problems.inlining.search.search_module`), resumable: the
labels imitation of search learns from, and a measure of how much smaller
than ``-Oz`` inlining decisions alone can make each project.

The output directory holds one ``<key>.npz`` per unit (the best
compilation's features, LLVM's decisions and the answers, its flips; the
default compilation's features and decisions, and per question what its
single flip changed in ``.text``, where it was tried) and
``results.jsonl``, one line per unit (program, project, questions, ``.text``
under ``-Oz`` and at best, compilations, seconds). A unit already in
``results.jsonl`` is not searched again; a unit whose compilation fails is
recorded with its error and skipped by later runs as well.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from mlbridge.corpus.program import Program
from mlbridge.errors import MlbridgeError
from mlbridge.llvm.versions import LlvmTools
from mlbridge.output_files import open_output_file
from mlbridge.problems.inlining import DEFAULT_FEATURE
from mlbridge.problems.inlining.imitation import Dataset
from mlbridge.problems.inlining.search import compile_with_flips, search_module

RESULTS = "results.jsonl"


@dataclass(frozen=True)
class UnitResult:
    """One line of ``results.jsonl``."""

    program: str
    project: str
    questions: int
    oz_text: int
    best_text: int
    compilations: int
    seconds: float
    error: str = ""


def unit_key(program: Program) -> str:
    """A file name for ``program``'s labels (its name may hold slashes)."""
    return hashlib.sha256(program.name.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def read_results(out: Path) -> Dict[str, UnitResult]:
    """The units recorded in ``out/results.jsonl``, by program name (a torn
    last line, from an interrupted run, is ignored)."""
    results: Dict[str, UnitResult] = {}
    path = out / RESULTS
    if not path.is_file():
        return results
    for line in path.read_text("utf-8").splitlines():
        try:
            record = UnitResult(**json.loads(line))
        except (ValueError, TypeError):
            continue
        results[record.program] = record
    return results


def search_unit(
    program: Program, out: Path, budget: int, seed: int, llvm: Optional[LlvmTools] = None
) -> UnitResult:
    """Searches ``program`` (one source file) and writes its labels to
    ``out/<key>.npz``; its line of ``results.jsonl`` (with the error, if a
    compilation failed)."""
    start = time.monotonic()
    compile = functools.partial(compile_with_flips, llvm=llvm)
    try:
        found = search_module(
            program.sources[0], program.flags, budget, seed, work=out, compile=compile
        )
    except MlbridgeError as err:
        return UnitResult(program.name, program.project, 0, 0, 0, 0, 0.0, str(err)[:500])
    best = found.best
    np.savez_compressed(
        out / f"{unit_key(program)}.npz",
        names=np.asarray(best.names),
        features=best.features,
        defaults=best.defaults,
        decisions=best.decisions,
        flips=np.asarray(sorted(found.flips), np.int64),
        default_features=found.default.features,
        default_decisions=found.default.defaults,
        single_deltas=found.single_deltas(),
        tried=found.tried(),
    )
    return UnitResult(
        program.name,
        program.project,
        found.default.questions,
        found.default.text_bytes,
        best.text_bytes,
        found.compilations,
        round(time.monotonic() - start, 2),
    )


def search_programs(
    programs: Sequence[Program],
    out: Path,
    budget: int = 200,
    seed: int = 0,
    on_unit: Optional[Callable[[UnitResult], None]] = None,
    llvm: Optional[LlvmTools] = None,
    jobs: int = 1,
) -> List[UnitResult]:
    """Searches each single-source program of ``programs`` not yet in
    ``out`` with the clang of ``llvm``, ``jobs`` units at once; returns
    every unit's result, old and new, in ``programs`` order. A unit's line
    is written when its search ends, so an interrupted run loses at most the
    units being searched."""
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    out.mkdir(parents=True, exist_ok=True)
    done = read_results(out)
    results = out / RESULTS
    if results.is_file() and not results.read_bytes().endswith(b"\n"):
        with open_output_file(results, append=True) as stream:
            stream.write(b"\n")  # after a line torn by an interrupted run
    pending = [p for p in programs if p.name not in done and len(p.sources) == 1]

    def record(result: UnitResult) -> None:
        with open_output_file(results, append=True) as stream:
            stream.write((json.dumps(result.__dict__) + "\n").encode("utf-8"))
        done[result.program] = result
        if on_unit is not None:
            on_unit(result)

    if jobs == 1:
        for program in pending:
            record(search_unit(program, out, budget, seed, llvm))
    else:
        # Each search is a chain of compiler processes: threads keep the
        # cores busy, and this thread alone writes results.jsonl.
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(search_unit, p, out, budget, seed, llvm) for p in pending]
            try:
                for future in as_completed(futures):
                    record(future.result())
            finally:
                for future in futures:
                    future.cancel()
    return [done[p.name] for p in programs if p.name in done]


def per_project(results: Sequence[UnitResult]) -> Dict[str, Dict[str, float]]:
    """Per project: units searched, ``-Oz`` and best ``.text`` in total, and
    their ratio."""
    table: Dict[str, Dict[str, float]] = {}
    for r in results:
        if r.error:
            continue
        row = table.setdefault(r.project, {"units": 0, "oz_text": 0, "best_text": 0})
        row["units"] += 1
        row["oz_text"] += r.oz_text
        row["best_text"] += r.best_text
    for row in table.values():
        row["ratio"] = row["best_text"] / row["oz_text"] if row["oz_text"] else 1.0
    return table


def _searched(
    out: Path, programs: Sequence[Program]
) -> Iterator[Tuple[Program, Dict[str, np.ndarray]]]:
    """The units of ``programs`` searched into ``out`` (units with an error
    or not searched are left out) and their arrays; every unit must have the
    same features (``names``)."""
    done = read_results(out)
    names: Optional[List[str]] = None
    for program in programs:
        record = done.get(program.name)
        if record is None or record.error:
            continue
        with np.load(out / f"{unit_key(program)}.npz") as unit:
            arrays = {key: unit[key] for key in unit.files}
        unit_names = [str(n) for n in arrays["names"]]
        if names is None:
            names = unit_names
        elif unit_names != names:
            raise MlbridgeError(f"{program.name}: its labels have other features than the rest")
        yield program, arrays
    if names is None:
        raise MlbridgeError(f"{out}: no searched unit among the {len(programs)} programs")


def labels_dataset(out: Path, programs: Sequence[Program], repeat_flipped: int = 1) -> Dataset:
    """The call sites of the best compilations of ``programs`` searched into
    ``out`` (units with an error or not searched are left out), labelled with
    the answers that compilation gave: a Dataset for
    :func:`mlbridge.problems.inlining.imitation.train_imitation`. Rows whose answer is not
    LLVM's (the flips that made a unit smaller, rare) are repeated
    ``repeat_flipped`` times."""
    if repeat_flipped < 1:
        raise ValueError("repeat_flipped must be at least 1")
    names: List[str] = []
    rows: List[np.ndarray] = []
    labels: List[np.ndarray] = []
    origin: List[str] = []
    for program, unit in _searched(out, programs):
        names = [str(n) for n in unit["names"]]
        weight = np.where(unit["decisions"] != unit["defaults"], repeat_flipped, 1)
        rows.append(np.repeat(unit["features"], weight, axis=0))
        labels.append(np.repeat(unit["decisions"], weight))
        origin += [program.name] * int(weight.sum())
    return Dataset(
        names,
        np.concatenate(rows).astype(np.int64).reshape(-1, len(names)),
        np.concatenate(labels).astype(np.int64),
        origin,
    )


def flip_dataset(
    out: Path,
    programs: Sequence[Program],
    neutral_weight: float = 0.5,
    max_weight: float = 256.0,
) -> Tuple[Dataset, np.ndarray]:
    """What flipping one call site alone did, for the call sites of the
    default (``-Oz``) compilations of ``programs`` searched into ``out``
    whose single flip was tried: a Dataset whose features are LLVM's plus
    ``inlining_default`` and whose label is 1 where the flip made ``.text``
    smaller, and a weight per row, the bytes at stake (``|delta|``, at most
    ``max_weight``; ``neutral_weight`` where the flip changed nothing), for
    :func:`mlbridge.problems.inlining.imitation.train_imitation` with ``flips=True``."""
    if neutral_weight <= 0 or max_weight < 1:
        raise ValueError("neutral_weight must be positive and max_weight at least 1")
    names: List[str] = []
    rows: List[np.ndarray] = []
    labels: List[np.ndarray] = []
    weights: List[np.ndarray] = []
    origin: List[str] = []
    for program, unit in _searched(out, programs):
        if "single_deltas" not in unit:
            raise MlbridgeError(
                f"{program.name}: searched by an older mlbridge (no single flips' sizes)"
            )
        names = [str(n) for n in unit["names"]]
        tried = unit["tried"]
        deltas = unit["single_deltas"][tried]
        rows.append(
            np.column_stack([unit["default_features"][tried], unit["default_decisions"][tried]])
        )
        labels.append((deltas < 0).astype(np.int64))
        weights.append(
            np.where(deltas == 0, neutral_weight, np.minimum(np.abs(deltas), max_weight))
        )
        origin += [program.name] * len(deltas)
    data = Dataset(
        [*names, DEFAULT_FEATURE],
        np.concatenate(rows).astype(np.int64).reshape(-1, len(names) + 1),
        np.concatenate(labels),
        origin,
    )
    return data, np.concatenate(weights).astype(np.float32)

"""Searching a module's inlining decisions (mlbridge.problems.inlining.search):
LLVM's own decisions are exactly -Oz, a flip set is a deterministic policy,
and the greedy search keeps only what makes .text smaller."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import FrozenSet, Sequence

import numpy as np
import pytest

from mlbridge.llvm.outcomes import CodeBytes, text_size
from mlbridge.problems.inlining.search import Trace, compile_with_flips, search_module

needs_clang = pytest.mark.skipif(not shutil.which("clang-19"), reason="needs clang-19")

SOURCE = """
static int g;
static int step(int x) { g += x; return g * 3 + (x ^ 5); }
struct S { int a, b, c, d; };
static int mix(struct S *s, int x) {
  s->a += x * 3; s->b ^= s->a >> 2; s->c += s->b * x; s->d -= s->c >> 1;
  return s->a + s->b + s->c + s->d;
}
int f1(int y) { return step(y) + step(y + 1) + step(y + 2); }
int f2(struct S *s, int y) { return mix(s, y) * 2 + step(y); }
int f3(struct S *s, int y) { return mix(s, y + 3) - mix(s, y); }
"""


@needs_clang
def test_no_flip_is_exactly_oz_and_a_flip_set_is_deterministic(tmp_path):
    source = tmp_path / "m.c"
    source.write_text(SOURCE)
    plain = tmp_path / "plain.o"
    subprocess.run(["clang-19", "-Oz", "-c", "-w", str(source), "-o", str(plain)], check=True)
    default = compile_with_flips(source, [], frozenset(), tmp_path)
    assert default.text_bytes == text_size(str(plain))
    assert not (tmp_path / "search.o").exists()  # removed unless kept
    kept = tmp_path / "kept.o"
    compile_with_flips(source, [], frozenset(), tmp_path, keep=kept)
    assert kept.read_bytes() == plain.read_bytes()
    assert default.questions >= 4
    assert "inlining_default" not in default.names
    assert default.features.shape == (default.questions, len(default.names))
    assert np.array_equal(default.decisions, default.defaults)
    flips = frozenset({0, default.questions - 1})
    once = compile_with_flips(source, [], flips, tmp_path)
    again = compile_with_flips(source, [], flips, tmp_path)
    assert once.text_bytes == again.text_bytes
    assert np.array_equal(once.decisions, again.decisions)
    assert once.decisions[0] != once.defaults[0]
    flipped = [i for i in range(once.questions) if once.decisions[i] != once.defaults[i]]
    assert set(flipped) <= flips


@needs_clang
def test_the_search_never_returns_more_than_oz_and_its_trace_is_its_flips(tmp_path):
    source = tmp_path / "m.c"
    source.write_text(SOURCE)
    result = search_module(source, [], budget=3, seed=1)
    assert result.best.text_bytes <= result.default.text_bytes
    assert result.ratio <= 1.0
    assert 1 + min(3, result.default.questions) <= result.compilations
    flipped = {
        i
        for i in range(result.best.questions)
        if result.best.decisions[i] != result.best.defaults[i]
    }
    assert flipped == set(result.flips)


@needs_clang
def test_a_unit_that_does_not_compile_is_an_error_naming_clangs_message(tmp_path):
    from mlbridge.problems.inlining.search import SearchError

    source = tmp_path / "bad.c"
    source.write_text("int f(void) { return undeclared_function(); }\n")
    with pytest.raises(SearchError, match="exited with 1: .*undeclared_function"):
        compile_with_flips(source, [], frozenset(), tmp_path)


def _synthetic(sizes):
    """A compile function whose .text is ``sizes(flips)``: the search's logic alone."""
    calls = []

    def compile(source: Path, flags: Sequence[str], flips: FrozenSet[int], work: Path) -> Trace:
        calls.append(flips)
        n = 4
        defaults = np.zeros(n, np.int64)
        decisions = np.array([1 if i in flips else 0 for i in range(n)], np.int64)
        code = CodeBytes(sizes(flips), {})
        return Trace(("f",), np.zeros((n, 1), np.int64), defaults, decisions, code)

    return compile, calls


def test_greedy_keeps_the_best_single_flip_and_drops_one_that_stops_helping(tmp_path):
    def sizes(flips):
        return 100 - 3 * (0 in flips) - 2 * (2 in flips) + 4 * ({0, 2} <= flips) + 5 * (3 in flips)

    compile, calls = _synthetic(sizes)
    result = search_module(Path("m.c"), [], work=tmp_path, compile=compile)
    assert result.flips == frozenset({0}) and result.best.text_bytes == 97
    assert result.single_deltas().tolist() == [-3, 0, -2, 5] and result.tried().all()
    # LLVM's own, four single flips, then only {0, 2} (the best single is reused).
    assert calls == [frozenset(), *(frozenset({i}) for i in range(4)), frozenset({0, 2})]
    assert result.compilations == 6


def test_greedy_adds_flips_that_still_help_and_samples_within_the_budget(tmp_path):
    def sizes(flips):
        return 100 - 3 * (0 in flips) - 2 * (2 in flips) - 1 * (1 in flips)

    compile, calls = _synthetic(sizes)
    result = search_module(Path("m.c"), [], work=tmp_path, compile=compile)
    assert result.flips == frozenset({0, 1, 2}) and result.best.text_bytes == 94
    compile, calls = _synthetic(sizes)
    sampled = search_module(Path("m.c"), [], budget=2, seed=3, work=tmp_path, compile=compile)
    assert all(len(c) == 1 for c in calls[1:3]) and len(calls) <= 1 + 2 + 2
    assert sampled.best.text_bytes <= 100
    tried = sampled.tried()
    assert tried.sum() == 2 and set(np.flatnonzero(tried)) == {min(c) for c in calls[1:3]}
    assert (sampled.single_deltas()[~tried] == 0).all()


@needs_clang
def test_searching_a_corpus_records_each_unit_once_and_resumes(tmp_path):
    from mlbridge.corpus.program import TRAIN, Program
    from mlbridge.problems.inlining.search_labels import (
        per_project,
        read_results,
        search_programs,
        unit_key,
    )

    good = tmp_path / "m.c"
    good.write_text(SOURCE)
    broken = tmp_path / "broken.c"
    broken.write_text("int f( {\n")
    programs = [
        Program("proj/m.c", (good,), (), TRAIN),
        Program("proj/broken.c", (broken,), (), TRAIN),
    ]
    out = tmp_path / "labels"
    seen = []
    results = search_programs(programs, out, budget=2, on_unit=seen.append)
    assert [r.program for r in results] == ["proj/m.c", "proj/broken.c"]
    ok, failed = results
    assert ok.error == "" and ok.best_text <= ok.oz_text and ok.questions >= 4
    assert failed.error and failed.oz_text == 0
    labels = np.load(out / f"{unit_key(programs[0])}.npz")
    assert labels["features"].shape == (len(labels["decisions"]), len(labels["names"]))
    assert "inlining_default" not in list(labels["names"])
    again = search_programs(programs, out, budget=2, on_unit=seen.append)
    assert len(seen) == 2 and again == results
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    with open(out / "results.jsonl", "a") as torn:
        torn.write('{"program": "proj/x.c", "proj')  # an interrupted write
    assert set(read_results(out)) == {"proj/m.c", "proj/broken.c"}
    other = tmp_path / "n.c"
    other.write_text("int n(int x) { return x + 1; }\n")
    search_programs([*programs, Program("proj/n.c", (other,), (), TRAIN)], out, budget=2)
    assert set(read_results(out)) == {"proj/m.c", "proj/broken.c", "proj/n.c"}
    table = per_project(results)
    assert table["proj"]["units"] == 1 and table["proj"]["ratio"] == ok.best_text / ok.oz_text


@needs_clang
@pytest.mark.slow
def test_searching_units_at_once_gives_the_labels_of_searching_them_in_turn(tmp_path):
    from mlbridge.corpus.program import TRAIN, Program
    from mlbridge.problems.inlining.search_labels import read_results, search_programs, unit_key

    programs = []
    for n in range(4):
        source = tmp_path / f"m{n}.c"
        source.write_text(SOURCE.replace("* 3", f"* {n + 3}"))
        programs.append(Program(f"proj/m{n}.c", (source,), (), TRAIN))
    alone = search_programs(programs, tmp_path / "alone", budget=3)
    together = search_programs(programs, tmp_path / "together", budget=3, jobs=2)
    strip = [r.__dict__ | {"seconds": 0} for r in alone]
    assert [r.__dict__ | {"seconds": 0} for r in together] == strip
    assert set(read_results(tmp_path / "together")) == {p.name for p in programs}
    for program in programs:
        key = f"{unit_key(program)}.npz"
        a, b = np.load(tmp_path / "alone" / key), np.load(tmp_path / "together" / key)
        assert all(np.array_equal(a[k], b[k]) for k in a.files)


def test_labels_become_a_dataset_with_flipped_rows_repeated(tmp_path):
    import json

    from mlbridge.corpus.program import TRAIN, Program
    from mlbridge.errors import MlbridgeError
    from mlbridge.problems.inlining.search_labels import RESULTS, labels_dataset, unit_key

    programs = [Program(f"p/{n}.c", (tmp_path / f"{n}.c",), (), TRAIN) for n in "abc"]
    lines = []
    for program, decisions in zip(programs[:2], ([0, 1, 0], [1, 1])):
        n = len(decisions)
        np.savez_compressed(
            tmp_path / f"{unit_key(program)}.npz",
            names=np.asarray(["x", "y"]),
            features=np.arange(2 * n, dtype=np.int64).reshape(n, 2),
            defaults=np.zeros(n, np.int64),
            decisions=np.asarray(decisions, np.int64),
            flips=np.zeros(0, np.int64),
        )
        lines.append(
            {
                "program": program.name,
                "project": "p",
                "questions": n,
                "oz_text": 10,
                "best_text": 9,
                "compilations": 3,
                "seconds": 0.1,
            }
        )
    lines.append(
        {
            "program": "p/c.c",
            "project": "p",
            "questions": 0,
            "oz_text": 0,
            "best_text": 0,
            "compilations": 0,
            "seconds": 0.0,
            "error": "did not compile",
        }
    )
    (tmp_path / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in lines))
    data = labels_dataset(tmp_path, programs)
    assert data.names == ["x", "y"] and len(data) == 5
    assert data.decisions.tolist() == [0, 1, 0, 1, 1]
    heavy = labels_dataset(tmp_path, programs, repeat_flipped=3)
    assert heavy.decisions.tolist() == [0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1]
    assert heavy.programs.count("p/b.c") == 6
    with pytest.raises(MlbridgeError, match="no searched unit"):
        labels_dataset(tmp_path, programs[2:])


def test_single_flips_become_a_weighted_dataset_of_flips_that_paid(tmp_path):
    import json

    from mlbridge.corpus.program import TRAIN, Program
    from mlbridge.errors import MlbridgeError
    from mlbridge.problems.inlining import DEFAULT_FEATURE
    from mlbridge.problems.inlining.search_labels import RESULTS, flip_dataset, unit_key

    program = Program("p/a.c", (tmp_path / "a.c",), (), TRAIN)
    n = 4
    arrays = dict(
        names=np.asarray(["x", "y"]),
        features=np.zeros((n, 2), np.int64),
        defaults=np.zeros(n, np.int64),
        decisions=np.zeros(n, np.int64),
        flips=np.zeros(0, np.int64),
    )
    np.savez_compressed(tmp_path / f"{unit_key(program)}.npz", **arrays)
    record = {
        "program": program.name,
        "project": "p",
        "questions": n,
        "oz_text": 1000,
        "best_text": 990,
        "compilations": 5,
        "seconds": 0.1,
    }
    (tmp_path / RESULTS).write_text(json.dumps(record) + "\n")
    with pytest.raises(MlbridgeError, match="older mlbridge"):
        flip_dataset(tmp_path, [program])
    np.savez_compressed(
        tmp_path / f"{unit_key(program)}.npz",
        **arrays,
        default_features=np.arange(2 * n, dtype=np.int64).reshape(n, 2),
        default_decisions=np.asarray([1, 0, 1, 0], np.int64),
        single_deltas=np.asarray([-10, 0, 900, -1], np.int64),
        tried=np.asarray([True, True, True, False]),
    )
    data, weights = flip_dataset(tmp_path, [program], neutral_weight=0.25, max_weight=512)
    assert data.names == ["x", "y", DEFAULT_FEATURE]
    assert data.features.tolist() == [[0, 1, 1], [2, 3, 0], [4, 5, 1]]
    assert data.decisions.tolist() == [1, 0, 0]
    assert weights.tolist() == [10.0, 0.25, 512.0]
    with pytest.raises(ValueError):
        flip_dataset(tmp_path, [program], neutral_weight=0)

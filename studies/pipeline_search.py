"""A per-module random search over pass pipelines, in allocated bytes after
clang-19's ``-Oz`` code generation (docs/phase-ordering.md#a-richer-search).

The whole-pipeline configurations of ``size_configurations.py`` are one
neighbourhood of ``-Oz``; this study looks further. ``--budget`` pipelines
are drawn once (``--seed``), the same for every unit: each is one of the
service's whole pipelines (``default<Oz>`` and the ``pipeline-*`` actions)
with up to ``--max-around`` of the table's other actions (single passes and
sub-sequences of ``default<Oz>``) before it and after it. Every unit of the
chosen split (its first ``--max-units``, projects interleaved) is compiled
under ``-Oz``, the best constant chosen on validation and each drawn
pipeline: the search's figure for a unit is its smallest object, within a
budget of ``--budget`` + 2 compilations. Rows go to ``OUT/search.jsonl`` as
they are made (a rerun resumes); the report, per project and in total, to
``OUT/report.json``: ``-Oz``, the constant, the search, and the drawn
pipeline best in total (a constant the search found).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from mlbridge.llvm.versions import tools
from mlbridge.native import phase_service_path
from mlbridge.problems.phase_ordering.configurations import (
    OZ,
    Configuration,
    append_rows,
    measure,
    read_table,
)
from mlbridge.problems.phase_ordering.environment import describe_service

sys.path.insert(0, str(Path(__file__).resolve().parent))
from size_configurations import corpus_units  # noqa: E402

#: The best constant chosen on the validation projects (size_configurations.py).
CONSTANT = Configuration("constant", pipeline="default<Oz;inline-threshold=10>,mergefunc")


def drawn_pipelines(
    actions: List[Dict[str, Any]], budget: int, max_around: int, seed: int
) -> List[Configuration]:
    """``budget`` distinct pipelines: a whole pipeline of the table with up
    to ``max_around`` other actions of it on each side."""
    whole = [
        a["pipeline"]
        for a in actions
        if a["name"] == "default<Oz>" or a["name"].startswith("pipeline-")
    ]
    parts = [a["pipeline"] for a in actions if a["pipeline"] not in whole]
    rng = np.random.default_rng(seed)
    seen = {CONSTANT.pipeline}
    out: List[Configuration] = []
    while len(out) < budget:
        before = [parts[i] for i in rng.integers(len(parts), size=rng.integers(max_around + 1))]
        after = [parts[i] for i in rng.integers(len(parts), size=rng.integers(max_around + 1))]
        text = ",".join([*before, whole[rng.integers(len(whole))], *after])
        if text not in seen:
            seen.add(text)
            out.append(Configuration(f"drawn-{len(out)}", pipeline=text))
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--split", default="validation", choices=("train", "validation"))
    parser.add_argument("--max-units", type=int, default=100)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--max-around", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    clang = tools().clang
    service = str(phase_service_path())
    drawn = drawn_pipelines(
        describe_service(service)["actions"], args.budget, args.max_around, args.seed
    )
    configurations = [Configuration(OZ), CONSTANT, *drawn]
    units = [
        u
        for u in corpus_units(args.corpus, [args.split], clang, args.max_units)
        if u.module is not None
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    rows_file = args.out / "search.jsonl"
    table = read_table(rows_file)
    started = time.monotonic()
    todo = [u for u in units if u.name not in table]
    for start in range(0, len(todo), max(1, args.jobs)):
        part = todo[start : start + max(1, args.jobs)]
        measured = measure(part, configurations, clang=clang, service=service, jobs=args.jobs)
        append_rows(rows_file, measured)
        table.update(measured)
        done = start + len(part)
        print(f"{done}/{len(todo)} units, {time.monotonic() - started:.0f} s", file=sys.stderr)

    compared = [
        u
        for u in units
        if all(isinstance(table[u.name].get(c.name), dict) for c in configurations[:2])
    ]

    def allocated(unit: str, config: str) -> float:
        outcome = table[unit].get(config)
        return float(outcome["allocated"]) if isinstance(outcome, dict) else float("inf")

    def as_constant(unit: str, config: str) -> float:
        # a pipeline that does not compile a unit: -Oz, as the wrappers do
        size = allocated(unit, config)
        return size if size != float("inf") else allocated(unit, OZ)

    names = [c.name for c in configurations]
    best_drawn = min(
        (c.name for c in drawn), key=lambda c: sum(as_constant(u.name, c) for u in compared)
    )
    per_project: Dict[str, Dict[str, float]] = {}
    for group in sorted({u.project for u in compared}) + ["total"]:
        members = [u.name for u in compared if group in ("total", u.project)]
        oz = sum(allocated(u, OZ) for u in members)
        per_project[group] = {
            "units": len(members),
            "oz_allocated": oz,
            "constant": sum(allocated(u, CONSTANT.name) for u in members) / oz,
            "search": sum(min(allocated(u, c) for c in names) for u in members) / oz,
            "best_drawn": sum(as_constant(u, best_drawn) for u in members) / oz,
        }
    wins = {c.name: 0 for c in drawn}
    for u in compared:
        best = min(names, key=lambda c: allocated(u.name, c))
        if best in wins and allocated(u.name, best) < allocated(u.name, CONSTANT.name):
            wins[best] += 1
    report_pipelines = {c.name: c.pipeline for c in drawn}
    report = {
        "split": args.split,
        "units": len(compared),
        "budget": args.budget + 2,
        "pipelines": report_pipelines,
        "best_drawn": {"name": best_drawn, "pipeline": report_pipelines[best_drawn]},
        "units_won_over_constant": {
            k: v for k, v in sorted(wins.items(), key=lambda kv: -kv[1]) if v
        },
        "per_project": per_project,
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    for project, row in per_project.items():
        print(
            f"  {project:20} {row['units']:4} units  constant {row['constant']:.4f}  "
            f"search {row['search']:.4f}  best drawn {row['best_drawn']:.4f}"
        )
    print(f"best drawn pipeline: {report['best_drawn']['pipeline']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Constant size configurations and the per-module search over them, in
allocated bytes, per project (docs/phase-ordering.md#baselines).

Every unit of the chosen splits is compiled under every configuration of
``mlbridge.problems.phase_ordering.configurations.CANDIDATES``; rows go to
``OUT/table.jsonl`` as they are made (a rerun resumes). Then:

- the best constant, chosen on the validation projects' units, and every
  configuration's total there;
- per project of every split measured: ``-Os``, the best constant and (not
  on test projects unless ``--search-on-test``: that is run once, after a
  model is final) the per-module search's bound, as ratios to ``-Oz``.

Written to ``OUT/report.json`` and printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

from mlbridge.corpus.load import load_corpus
from mlbridge.corpus.split import interleave_projects
from mlbridge.gym.modules import default_cache_dir, module_name, prepare_modules
from mlbridge.llvm.versions import tools
from mlbridge.native import phase_service_path
from mlbridge.problems.phase_ordering.chooser import reads_baseline
from mlbridge.problems.phase_ordering.configurations import (
    CANDIDATES,
    OZ,
    Configuration,
    Unit,
    append_rows,
    best_constant,
    complete_units,
    measure,
    per_unit_best,
    project_ratios,
    read_table,
)

SPLITS = ("train", "validation", "held-out")


def corpus_units(
    corpus: Path,
    splits: List[str],
    clang: str,
    max_units: Optional[int],
    only: Optional[Set[str]] = None,
) -> List[Unit]:
    """The units of ``splits``, each split's first ``max_units`` of its
    programs with their projects interleaved (a fixed shuffle), so that a
    sample covers as many projects as it can; of those, the ones named in
    ``only`` if given."""
    programs = interleave_projects([p for p in load_corpus(corpus) if p.split in splits], seed=0)
    if only is not None:
        programs = [
            p for p in programs if any(module_name(p, source) in only for source in p.sources)
        ]
    if max_units is not None:
        taken: Dict[str, int] = {}
        kept = []
        for program in programs:
            if taken.get(program.split, 0) < max_units:
                kept.append(program)
                taken[program.split] = taken.get(program.split, 0) + len(program.sources)
        programs = kept
    failed: Dict[str, str] = {}
    made = prepare_modules(programs, default_cache_dir(), clang=clang, failed=failed)
    modules = {m.name: m for m in made}
    units = []
    for program in programs:
        for source in program.sources:
            name = module_name(program, source)
            if only is not None and name not in only:
                continue
            module = modules.get(name)
            units.append(
                Unit(
                    name=name,
                    project=program.project,
                    split=program.split,
                    source=source,
                    flags=program.flags,
                    module=module.bitcode if module else None,
                    codegen_flags=tuple(module.codegen_flags()) if module else (),
                )
            )
    return units


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--splits", nargs="+", default=["validation"], choices=SPLITS)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--max-units", type=int, default=None, help="per split (projects interleaved)"
    )
    parser.add_argument("--search-on-test", action="store_true")
    parser.add_argument(
        "--known-units",
        action="store_true",
        help="only the units OUT/table.jsonl has already (a configuration added later)",
    )
    parser.add_argument(
        "--configurations",
        nargs="+",
        metavar="NAME",
        help="only these configurations (and -Oz, -Os) of CANDIDATES (default: all)",
    )
    parser.add_argument(
        "--best-constant",
        metavar="NAME",
        help="the best constant chosen before (without validation units here)",
    )
    parser.add_argument(
        "--chooser",
        type=Path,
        help="a chooser (ONNX) measured too, deployed in the service (one step)",
    )
    args = parser.parse_args(argv)

    clang = tools().clang
    service = str(phase_service_path())
    candidates = [
        c
        for c in CANDIDATES
        if not args.configurations or c.name in {OZ, "Os", *args.configurations}
    ]
    if args.chooser is not None:
        runner = f"onnx:{args.chooser.resolve()}"
        no_baseline = not reads_baseline(args.chooser)
        candidates.append(Configuration("chooser", runner=runner, no_baseline=no_baseline))
    args.out.mkdir(parents=True, exist_ok=True)
    rows_file = args.out / "table.jsonl"
    table = read_table(rows_file)
    only = set(table) if args.known_units else None
    units = corpus_units(args.corpus, args.splits, clang, args.max_units, only)
    todo = [u for u in units if any(c.name not in table.get(u.name, {}) for c in candidates)]
    started = time.monotonic()
    batch = max(1, args.jobs) * 4
    for start in range(0, len(todo), batch):
        part = todo[start : start + batch]
        measured = measure(
            part, candidates, clang=clang, service=service, jobs=args.jobs, known=table
        )
        append_rows(rows_file, measured)
        for unit, row in measured.items():
            table.setdefault(unit, {}).update(row)
        done = len(units) - len(todo) + start + len(part)
        print(f"{done}/{len(units)} units, {time.monotonic() - started:.0f} s", file=sys.stderr)

    names = [c.name for c in candidates]
    table = {u.name: {c: table[u.name][c] for c in names} for u in units if u.name in table}
    complete = set(complete_units(table))
    report: Dict[str, Any] = {
        "configurations": [c.__dict__ for c in candidates],
        "units": len(units),
        "compared": len(complete),
        "not_compared": {
            u: {c: o for c, o in table[u].items() if isinstance(o, str)}
            for u in table
            if u not in complete
        },
    }
    validation = [u.name for u in units if u.split == "validation" and u.name in complete]
    chosen = args.best_constant or OZ
    if validation:
        chosen, totals = best_constant(table, validation)
        base = totals[OZ]
        report["validation_totals"] = {
            c: {"bytes": t, "vs_oz": t / base} for c, t in totals.items()
        }
        report["best_constant"] = chosen
    report["splits"] = {}
    for split in args.splits:
        members = [u for u in units if u.split == split and u.name in complete]
        names = [u.name for u in members]
        figures = {
            "Os": project_ratios(table, members, dict.fromkeys(names, "Os")),
            "best_constant": project_ratios(table, members, dict.fromkeys(names, chosen)),
        }
        if args.chooser is not None:
            figures["chooser"] = project_ratios(table, members, dict.fromkeys(names, "chooser"))
        if split != "held-out" or args.search_on_test:
            figures["search"] = project_ratios(table, members, per_unit_best(table, names))
        report["splits"][split] = figures
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"{len(complete)}/{len(units)} units compared; best constant on validation: {chosen}")
    for split, figures in report["splits"].items():
        print(f"{split}:")
        projects = sorted(figures["Os"], key=lambda p: (p == "total", p))
        for project in projects:
            cells = "  ".join(
                f"{kind} {row['allocated']:.4f} ({row['text']:.4f})"
                for kind, row in ((k, figures[k][project]) for k in figures)
            )
            print(f"  {project:24} {int(figures['Os'][project]['units']):4} units  {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

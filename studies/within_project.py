"""Does imitation of search carry over to other files of the projects it was
trained on? The programs of a built corpus (``--projects``, or all) are
split by file, not by project: a stable hash of each file's name puts 25%
in test, 15% in validation, the rest in training. ``mlbridge train
inlining --method search`` then runs on that split (rounds, validation
curve, early stopping, resumable in ``--out``), and the kept policy, if
any, is measured on the test files of every project against ``-Oz`` (each
project's code counted as linked).

Usage: python studies/within_project.py --corpus DIR --out RUN [--projects a,b]
       [--margin 3] [--hidden 32] [--rounds 8] [--patience 8] [--workers 2]
Prints the rounds, then one line ``test RATIO {project: ratio}``
(docs/inlining-size.md, "Within one project"). A project's own
``compile_commands.json`` given to ``mlbridge train inlining`` is split by
file the same way, with validation set aside from training
(mlbridge.corpus.split.set_aside_validation).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import List

from mlbridge.corpus import load_corpus
from mlbridge.corpus.program import HELD_OUT, TRAIN, VALIDATION, Program
from mlbridge.corpus.split import held_out_score
from mlbridge.native import plugin_path
from mlbridge.problems.inlining.size_training import (
    POLICY,
    SizeTraining,
    ValidationSet,
    train_size_policy,
    validation_sample,
)

#: Shares of each project's files in test and in test + validation.
TEST, TEST_AND_VALIDATION = 0.25, 0.40


def file_split(name: str) -> str:
    """The split of the program ``name`` in this study (salted: not the
    corpus's own hash split)."""
    score = held_out_score("within:" + name)
    return HELD_OUT if score < TEST else VALIDATION if score < TEST_AND_VALIDATION else TRAIN


def programs_split_by_file(corpus: Path, projects: List[str]) -> List[Program]:
    chosen = [p for p in load_corpus(corpus) if not projects or p.project in projects]
    return [dataclasses.replace(p, split=file_split(p.name)) for p in chosen]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--projects", default="", help="comma-separated (default: all)")
    parser.add_argument("--margin", type=float, default=3.0)
    parser.add_argument("--hidden", type=int, default=0, help="hidden units (0: linear)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--patience", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    programs = programs_split_by_file(args.corpus, [p for p in args.projects.split(",") if p])
    counts = {s: sum(p.split == s for p in programs) for s in (TRAIN, VALIDATION, HELD_OUT)}
    print(f"files: {json.dumps(counts)}", flush=True)
    config = SizeTraining(
        margin=args.margin,
        hidden=(args.hidden,) if args.hidden else (),
        max_rounds=args.rounds,
        patience=args.patience,
        jobs=args.workers,
    )
    plugin = plugin_path()
    result = train_size_policy(
        programs, args.out, plugin, config, progress=lambda line: print(line, flush=True)
    )
    print(f"stopped: {result.stopped}; best round {result.best_round}", flush=True)
    if not (args.out / POLICY).is_file():
        print("test 1.0 (no round beat -Oz on validation: no policy)")
        return
    test_files = validation_sample([p for p in programs if p.split == HELD_OUT], 1 << 30, 0)
    ratio, per_project = ValidationSet(test_files, args.out / "test", args.workers).measure(
        args.out / POLICY, plugin
    )
    print(f"test {ratio:.5f} {json.dumps(per_project)}")


if __name__ == "__main__":
    main()

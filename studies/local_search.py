"""Does the search of imitation (every single flip, then the improving ones
added greedily) leave much behind? After it, an iterated local search
toggles every question of the best compilation's trajectory, keeps the best
improvement, and repeats (at most ``--rounds`` times), per C training unit.

Usage: python studies/local_search.py --corpus DIR [--units 40] [--seed 0] [--rounds 4]
Units: single-source C training units of 8 to 60 questions, at most 3 per
project, in a random order of ``--seed``. Prints one JSON line per unit,
then the totals (docs/inlining-size.md).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, FrozenSet, Optional, Sequence

from mlbridge.corpus import load_corpus
from mlbridge.corpus.program import TRAIN, Program
from mlbridge.problems.inlining.search import Trace, compile_with_flips, search_module

#: Units searched: as many questions as this, at least and at most.
QUESTIONS = (8, 60)
#: Units of one project, at most.
PER_PROJECT = 3


def improve(unit: Program, rounds: int) -> Optional[Dict[str, object]]:
    """The unit's -Oz, greedy and local-search ``.text``, or None if its
    number of questions is out of range."""
    start = time.monotonic()
    source, flags = unit.sources[0], unit.flags
    with tempfile.TemporaryDirectory(prefix="local-search-") as tmp:
        work = Path(tmp)
        default = compile_with_flips(source, flags, frozenset(), work)
        if not QUESTIONS[0] <= default.questions <= QUESTIONS[1]:
            return None

        def known(src: Path, fl: Sequence[str], flips: FrozenSet[int], where: Path) -> Trace:
            # LLVM's own compilation is the one just made: not compiled again.
            return default if not flips else compile_with_flips(src, fl, flips, where)

        found = search_module(source, flags, QUESTIONS[1], 0, work=work, compile=known)
        best, flips = found.best, found.flips
        compilations, done = found.compilations, 0
        while done < rounds:
            done += 1
            top: Optional[tuple[Trace, FrozenSet[int]]] = None
            for question in range(best.questions):
                candidate = flips ^ {question}
                trace = compile_with_flips(source, flags, candidate, work)
                compilations += 1
                if trace.text_bytes < (top[0] if top else best).text_bytes:
                    top = (trace, candidate)
            if top is None:
                break
            best, flips = top
    return {
        "unit": unit.name,
        "project": unit.project,
        "questions": default.questions,
        "oz": default.text_bytes,
        "greedy": found.best.text_bytes,
        "local": best.text_bytes,
        "rounds": done,
        "compilations": compilations,
        "seconds": round(time.monotonic() - start),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--units", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    units = [
        p
        for p in load_corpus(args.corpus)
        if p.split == TRAIN and len(p.sources) == 1 and p.sources[0].suffix == ".c"
    ]
    random.Random(args.seed).shuffle(units)
    per_project: Counter[str] = Counter()
    totals = Counter[str]()
    with ThreadPoolExecutor(2) as pool:
        for i in range(0, len(units), 8):
            if totals["units"] >= args.units:
                break
            batch = [u for u in units[i : i + 8] if per_project[u.project] < PER_PROJECT]
            for line in pool.map(lambda u: improve(u, args.rounds), batch):
                if line is None or totals["units"] >= args.units:
                    continue
                project = str(line["project"])
                if per_project[project] >= PER_PROJECT:
                    continue
                per_project[project] += 1
                totals.update(units=1, oz=line["oz"], greedy=line["greedy"], local=line["local"])
                print(json.dumps(line), flush=True)
    oz = max(1, totals["oz"])
    summary = {**totals, "greedy_vs_oz": totals["greedy"] / oz, "local_vs_oz": totals["local"] / oz}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How much of what per-unit search saves survives linking? Every unit of
one project of a corpus is searched (:func:`mlbridge.problems.inlining.search.search_module`),
and the project is measured two ways with LLVM's decisions and with the best
flips found: the sum of the objects' ``.text``, and the code
the linker keeps, each COMDAT group once (:func:`mlbridge.llvm.outcomes.linked_code`).

Usage: python studies/linked_search.py --corpus DIR --project NAME [--budget 60]
Prints one JSON line per unit, then the project's (docs/inlining-size.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import List

from mlbridge.corpus import load_corpus
from mlbridge.llvm.outcomes import CodeBytes, linked_code
from mlbridge.problems.inlining.search import search_module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--budget", type=int, default=60, help="single flips per unit")
    args = parser.parse_args()
    units = [
        p for p in load_corpus(args.corpus) if p.project == args.project and len(p.sources) == 1
    ]
    if not units:
        print(f"no single-source unit of {args.project} in {args.corpus}", file=sys.stderr)
        return 1
    oz: List[CodeBytes] = []
    best: List[CodeBytes] = []
    with tempfile.TemporaryDirectory(prefix="linked-search-") as tmp:
        work = Path(tmp)
        for unit in units:
            start = time.monotonic()
            found = search_module(unit.sources[0], unit.flags, args.budget, 0, work=work)
            oz.append(found.default.code)
            best.append(found.best.code)
            line = {
                "unit": unit.name,
                "oz": found.default.text_bytes,
                "best": found.best.text_bytes,
            }
            print(json.dumps({**line, "seconds": round(time.monotonic() - start)}), flush=True)
    objects = (sum(c.total for c in oz), sum(c.total for c in best))
    linked = (linked_code(oz), linked_code(best))
    report = {
        "project": args.project,
        "units": len(units),
        "objects": {"oz": objects[0], "best": objects[1], "ratio": objects[1] / objects[0]},
        "linked": {"oz": linked[0], "best": linked[1], "ratio": linked[1] / linked[0]},
    }
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

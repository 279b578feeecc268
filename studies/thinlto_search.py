"""How much can inlining decisions save under ThinLTO? One program of a
corpus project (its objects and libraries as its build links them) is built
with ``-Oz -flto=thin`` and linked by lld as a distributed ThinLTO build.
Every module's backend is then searched
(:func:`mlbridge.problems.inlining.search.search_module`): the functions of other
modules it imported are inlining decisions too. The program is linked with
each module's best flips and measured against plain ``-Oz`` (file by file)
and ThinLTO ``-Oz``.

Usage: python studies/thinlto_search.py --corpus DIR --project NAME --program less
    --objects "main.o screen.o ..." [--libs "-lncurses"] [--budget 250] [--work DIR]
Needs clang-19 and lld-19. Prints one JSON line per module, then the
program's (docs/inlining-size.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List

from thinlto_program import LinkedProgram, run

from mlbridge.llvm.outcomes import text_size
from mlbridge.llvm.versions import tools
from mlbridge.problems.inlining.search import compile_with_flips, search_module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--program", required=True, help="the linked program's name")
    parser.add_argument("--objects", required=True, help="its objects, as its build links them")
    parser.add_argument("--libs", default="", help="the libraries it links (-lm ...)")
    parser.add_argument("--budget", type=int, default=250, help="single flips per module")
    parser.add_argument("--work", type=Path, default=Path("thinlto-search"))
    args = parser.parse_args()
    llvm = tools()
    program = LinkedProgram.of(
        args.corpus, args.project, args.program, args.objects, args.libs, llvm
    )
    clang, objects = llvm.clang, program.objects
    dirs = {d: args.work / d for d in ("oz", "bitcode", "thin", "best")}
    for where in dirs.values():
        where.mkdir(parents=True, exist_ok=True)
    build, link = program.build, program.link

    def index(obj: str) -> List[str]:
        return ["-x", "ir", f"-fthinlto-index={dirs['bitcode'] / obj}.thinlto.bc"]

    build(dirs["oz"])
    build(dirs["bitcode"], "-flto=thin")
    link(dirs["bitcode"], "-flto=thin", "-Wl,--thinlto-index-only")

    def backend(obj: str) -> None:
        """ThinLTO -Oz: LLVM's decisions in the module's backend."""
        bitcode, native = dirs["bitcode"] / obj, dirs["thin"] / obj
        run([clang, "-Oz", "-c", "-w", *index(obj), str(bitcode), "-o", str(native)])

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(backend, objects))

    def search(obj: str) -> Dict[str, object]:
        start = time.monotonic()
        found = search_module(dirs["bitcode"] / obj, index(obj), args.budget, 0, work=args.work)
        compile_with_flips(
            dirs["bitcode"] / obj, index(obj), found.flips, args.work, llvm, keep=dirs["best"] / obj
        )
        return {
            "module": obj,
            "questions": found.default.questions,
            "thin": found.default.text_bytes,
            "best": found.best.text_bytes,
            "compilations": found.compilations,
            "seconds": round(time.monotonic() - start),
        }

    with ThreadPoolExecutor(2) as pool:
        for line in pool.map(search, objects):
            print(json.dumps(line), flush=True)
    sizes = {name: text_size(str(link(dirs[name]))) for name in ("oz", "thin", "best")}
    report = {
        "program": args.program,
        "modules": len(objects),
        "text": sizes,
        "thin_vs_oz": sizes["thin"] / sizes["oz"],
        "best_vs_thin": sizes["best"] / sizes["thin"],
        "best_vs_oz": sizes["best"] / sizes["oz"],
    }
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

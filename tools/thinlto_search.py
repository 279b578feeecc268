"""How much can inlining decisions save under ThinLTO? One program of a
corpus project (its objects and libraries as its build links them) is built
with ``-Oz -flto=thin`` and linked by lld as a distributed ThinLTO build.
Every module's backend is then searched
(:func:`mlbridge.train.inlining_search.search_module`): the functions of other
modules it imported are inlining decisions too. The program is linked with
each module's best flips and measured against plain ``-Oz`` (file by file)
and ThinLTO ``-Oz``.

Usage: python tools/thinlto_search.py --corpus DIR --project NAME --program less
    --objects "main.o screen.o ..." [--libs "-lncurses"] [--budget 250] [--work DIR]
Needs clang-19 and lld-19. Prints one JSON line per module, then the
program's (docs/inlining-size.md).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Sequence

from mlbridge import child_process
from mlbridge.corpus import load_corpus
from mlbridge.corpus.program import Program
from mlbridge.llvm.outcomes import text_size
from mlbridge.llvm.versions import tools
from mlbridge.train.inlining_search import compile_with_flips, search_module


def _run(command: Sequence[str]) -> None:
    done = child_process.run(list(command), capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-3000:]}")


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
    clang, objects, libs = llvm.clang, args.objects.split(), shlex.split(args.libs)
    units: Dict[str, Program] = {
        f"{p.sources[0].stem}.o": p
        for p in load_corpus(args.corpus)
        if p.project == args.project and len(p.sources) == 1
    }
    missing = [o for o in objects if o not in units]
    if missing:
        print(f"no unit of {args.project} makes {missing}", file=sys.stderr)
        return 1
    dirs = {d: args.work / d for d in ("oz", "bitcode", "thin", "best")}
    for where in dirs.values():
        where.mkdir(parents=True, exist_ok=True)

    def build(where: Path, *extra: str) -> None:
        def one(obj: str) -> None:
            unit = units[obj]
            _run([clang, "-Oz", *extra, "-c", "-w", *unit.flags, str(unit.sources[0]), "-o",
                  str(where / obj)])  # fmt: skip

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(one, objects))

    def link(where: Path, *extra: str) -> Path:
        out = where / args.program
        _run([clang, "-fuse-ld=lld", *extra, "-o", str(out), *(str(where / o) for o in objects),
              *libs])  # fmt: skip
        return out

    def index(obj: str) -> List[str]:
        return ["-x", "ir", f"-fthinlto-index={dirs['bitcode'] / obj}.thinlto.bc"]

    build(dirs["oz"])
    build(dirs["bitcode"], "-flto=thin")
    link(dirs["bitcode"], "-flto=thin", "-Wl,--thinlto-index-only")

    def backend(obj: str) -> None:
        """ThinLTO -Oz: LLVM's decisions in the module's backend."""
        bitcode, native = dirs["bitcode"] / obj, dirs["thin"] / obj
        _run([clang, "-Oz", "-c", "-w", *index(obj), str(bitcode), "-o", str(native)])

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
    sizes = {
        name: text_size(str(link(dirs[name])), llvm.llvm_size) for name in ("oz", "thin", "best")
    }
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

"""A size model deployed in a ThinLTO build, measured. One program of a
corpus project (its objects and libraries as its build links them) is built
four ways and linked by lld: ``-Oz`` file by file, ``-Oz`` file by file with
the model in clang (``-fpass-plugin``), ThinLTO ``-Oz`` (in-process, lld's
backends), and ThinLTO ``-Oz`` with the model in lld's backends
(``--load-pass-plugin``). The program's ``.text`` is compared; the plugin's
statistics say that it served every module and never fell back.

Usage: python studies/thinlto_deploy.py --corpus DIR --project NAME --program less
    --objects "main.o screen.o ..." [--under DIR ...] [--libs "-lncurses"] [--shared]
    [--policy inlining-size] [--work DIR]
Needs clang-19, lld-19 and the plugin. Prints one JSON line
(docs/inlining-size.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict

from thinlto_program import LinkedProgram

from mlbridge.llvm.outcomes import text_size
from mlbridge.llvm.plugin_stats import read_inline_stats
from mlbridge.llvm.versions import tools
from mlbridge.models import model_file
from mlbridge.native import plugin_path
from mlbridge.problems.inlining.toolchain import onnx_plugin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--program", required=True, help="the linked program's name")
    parser.add_argument("--objects", default="", help="its objects, as its build links them")
    parser.add_argument(
        "--under",
        action="append",
        default=[],
        help="and every unit of a directory ending so (lib, src/lib; repeatable)",
    )
    parser.add_argument("--libs", default="", help="the libraries it links (-lm ...)")
    parser.add_argument("--shared", action="store_true", help="a shared library")
    parser.add_argument(
        "--policy", default="inlining-size", help="a shipped model's name or an ONNX file"
    )
    parser.add_argument("--work", type=Path, default=Path("thinlto-deploy"))
    args = parser.parse_args()
    llvm = tools()
    program = LinkedProgram.of(
        args.corpus,
        args.project,
        args.program,
        args.objects,
        args.libs,
        llvm,
        args.shared,
        args.under,
    )
    plugin = onnx_plugin(plugin_path(llvm=llvm.major), model_file(args.policy))
    work = args.work.resolve()
    stats = {name: work / f"{name}.stats.jsonl" for name in ("model", "thin-model")}
    for path in stats.values():
        path.unlink(missing_ok=True)
    thin = ["-Oz", "-flto=thin", "-Wl,--thinlto-jobs=2"]
    served = {
        name: {**plugin.env, "MLBRIDGE_INLINE_STATS": str(path)} for name, path in stats.items()
    }
    program.build(work / "oz")
    program.build(work / "model", *plugin.flags(), env=served["model"])
    program.build(work / "bitcode", "-flto=thin")
    linked: Dict[str, Path] = {
        "-Oz": program.link(work / "oz"),
        "model": program.link(work / "model"),
        "thin": program.link(work / "bitcode", *thin),
    }
    # The same bitcode linked again, the model in lld's ThinLTO backends.
    linked["thin-model"] = program.link(
        work / "bitcode",
        *thin,
        f"-Wl,--load-pass-plugin={plugin.path}",
        env=served["thin-model"],
        out=work / f"{args.program}.thin-model",
    )
    sizes = {name: text_size(str(path)) for name, path in linked.items()}
    served_stats = {name: read_inline_stats(path) for name, path in stats.items()}
    report = {
        "program": args.program,
        "project": args.project,
        "modules": len(program.objects),
        "text": sizes,
        "model_vs_oz": sizes["model"] / sizes["-Oz"],
        "thin_vs_oz": sizes["thin"] / sizes["-Oz"],
        "thin_model_vs_thin": sizes["thin-model"] / sizes["thin"],
        "thin_model_vs_oz": sizes["thin-model"] / sizes["-Oz"],
        "served": {
            name: {
                "modules": s.modules,
                "decisions": s.decisions,
                "deferred": s.deferred,
                "fallbacks": s.fallbacks,
            }
            for name, s in served_stats.items()
        },
    }
    print(json.dumps(report), flush=True)
    short = [n for n, s in served_stats.items() if s.modules < len(program.objects) or s.fallbacks]
    if short:
        print(f"the model did not decide everywhere in {short}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where does an inlining model's code differ from ``-Oz``'s, C++ COMDAT
group by group? Each validation unit of the chosen projects (the sample
validation measures) is compiled with ``-Oz`` and with the model through
the plugin, and the bytes the model saves (+) or adds (-) are split into:
the code outside COMDAT groups, the groups both objects hold, the groups
only ``-Oz``'s object holds (inlined away by the model) and the groups only
the model's object holds (emitted because it declined a call ``-Oz``
inlined), besides each project's linked ratio to ``-Oz``.

Usage: python studies/comdat_breakdown.py --corpus DIR --out RUN
       --projects fmtlib,muparser [--model inlining-size]
Prints one JSON line per project (docs/inlining-size.md, "What the shipped
model changes").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Dict, List

from mlbridge.corpus.defaults import load_corpus
from mlbridge.corpus.program import VALIDATION
from mlbridge.llvm.outcomes import CodeBytes, linked_code
from mlbridge.models import model_file
from mlbridge.native import plugin_path
from mlbridge.problems.inlining.size_training import validation_sample
from mlbridge.problems.inlining.toolchain import compile_program, onnx_plugin


def breakdown(oz: List[CodeBytes], model: List[CodeBytes]) -> Dict[str, int]:
    """Bytes the model saves (+) against ``-Oz``, by kind, summed over units."""
    kinds = {"own": 0, "both": 0, "only_oz": 0, "only_model": 0, "groups_only_model": 0}
    for before, after in zip(oz, model):
        kinds["own"] += before.own - after.own
        for name, size in before.comdat.items():
            if name in after.comdat:
                kinds["both"] += size - after.comdat[name]
            else:
                kinds["only_oz"] += size
        for name, size in after.comdat.items():
            if name not in before.comdat:
                kinds["only_model"] -= size
                kinds["groups_only_model"] += 1
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--projects", required=True, help="comma-separated validation projects")
    parser.add_argument("--model", default="inlining-size", help="a shipped model or an ONNX file")
    parser.add_argument("--validation-units", type=int, default=40)
    args = parser.parse_args()
    model = model_file(args.model)
    wanted = set(args.projects.split(","))
    programs = [p for p in load_corpus(args.corpus, False) if p.split == VALIDATION]
    chosen = [
        p for p in validation_sample(programs, args.validation_units, 0) if p.project in wanted
    ]
    deployed = onnx_plugin(plugin_path(), model)
    for project in sorted(wanted):
        oz: List[CodeBytes] = []
        served: List[CodeBytes] = []
        for index, program in enumerate(p for p in chosen if p.project == project):
            where = args.out / project / str(index)
            oz += compile_program(program, where / "oz", None, 1).code
            served += compile_program(program, where / "model", deployed, 1).code
        line = {"project": project, "units": len(oz), **breakdown(oz, served)}
        line["linked_ratio"] = round(linked_code(served) / max(1, linked_code(oz)), 5)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()

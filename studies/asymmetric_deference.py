"""Which of LLVM's answers does a deferring inlining model overrule? The
model's deference bonus (docs/training.md, "Deference") is one number,
added to the logit of whichever answer LLVM gave. This study gives it one
bonus where LLVM says "do not inline" and another where it says "inline",
and measures each pair on the validation projects of a corpus (never its
test projects), each project's code counted as linked. A large bonus on one
side keeps every answer of that side as LLVM gave it, so the ratio left
is what the model's overrules of the other side do.

Usage: python studies/asymmetric_deference.py --corpus DIR --out RUN
       [--model inlining-size] [--pairs 1.5:1.5,1.5:3,1.5:100,0:100]
Prints one JSON line per pair ``NO:YES``: the total ratio to ``-Oz`` and the
ratio per validation project (docs/inlining-size.md, "What the shipped
model changes").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import List, Tuple

import numpy as np

import onnx
from mlbridge.corpus.defaults import load_corpus
from mlbridge.models import model_file
from mlbridge.problems.inlining.size_training import validation_measure
from mlbridge.train.export import DEFERENCE_KEY
from onnx import numpy_helper


def _pairs(text: str) -> List[Tuple[float, float]]:
    pairs = []
    for item in text.split(","):
        no, _, yes = item.partition(":")
        pairs.append((float(no), float(yes)))
    return pairs


def with_bonuses(model: onnx.ModelProto, no: float, yes: float) -> onnx.ModelProto:
    """``model`` with its bonus table (the constant diagonal matrix of its
    one bonus) replaced by one bonus per LLVM answer."""
    bonus = {p.key: p.value for p in model.metadata_props}.get(DEFERENCE_KEY)
    if bonus is None:
        raise SystemExit("the model has no deference bonus in its metadata")
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    found = 0
    for node in changed.graph.node:
        if node.op_type != "Constant" or not node.attribute:
            continue
        value = numpy_helper.to_array(node.attribute[0].t)
        if value.shape == (2, 2) and np.array_equal(value, np.eye(2) * float(bonus)):
            table = np.array([[no, 0.0], [0.0, yes]], np.float32)
            node.attribute[0].t.CopyFrom(numpy_helper.from_array(table, node.attribute[0].t.name))
            found += 1
    if found != 1:
        raise SystemExit(f"expected one bonus table in the model, found {found}")
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="inlining-size", help="a shipped model or an ONNX file")
    parser.add_argument("--pairs", default="1.5:1.5,1.5:3,1.5:6,1.5:100,0:100,0.5:100")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--validation-units", type=int, default=40)
    args = parser.parse_args()
    path = model_file(args.model)
    model = onnx.load(str(path))
    args.out.mkdir(parents=True, exist_ok=True)
    programs = load_corpus(args.corpus, False)
    measure = validation_measure(
        programs, args.out, args.workers, None, None, args.validation_units, 0
    )
    if measure is None:
        raise SystemExit("the corpus names no validation programs")
    for no, yes in _pairs(args.pairs):
        candidate = args.out / f"bonus-{no:g}-{yes:g}.onnx"
        onnx.save(with_bonuses(model, no, yes), str(candidate))
        ratio, per_project = measure(candidate)
        print(
            json.dumps({"no": no, "yes": yes, "ratio": ratio, "per_project": per_project}),
            flush=True,
        )


if __name__ == "__main__":
    main()

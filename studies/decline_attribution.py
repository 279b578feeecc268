"""Which of an inlining model's overrules make its gain, and its losses? The
shipped model only declines call sites LLVM would inline (docs/inlining-size.md,
"What the shipped model changes"). This study splits those declines in two:
at the last call to a static function (``callee_users`` is 1: a local
function with one call, which LLVM inlines with its last-call-to-static
bonus) and elsewhere. Two variants of the model each give LLVM's decision on
one side (an ONNX ``Where`` on ``inlining_default`` around the model's
answer), and are measured beside the model:

- on the validation projects (never the test projects), each project counted
  as linked, as validation measures;
- on a fixed sample of the training units, unit by unit, to count how many
  units the declines at last calls change, make smaller or make larger, with
  the features LLVM gave at each such decline (the plugin's training log).

Then a rule with no learned weights: LLVM's decisions, except that the last
call to a static function of at least K blocks is declined. Each K of
``--rules`` is measured on the same training units, and the best of them on
the validation projects, alone and added to the model's declines.

Usage: python studies/decline_attribution.py --corpus DIR --out RUN
       [--model inlining-size] [--train-units-per-project 30] [--rules 50,100,200]
Prints JSON lines (docs/inlining-size.md, "Where the gain comes from").
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

import onnx
from mlbridge.corpus.defaults import load_corpus
from mlbridge.corpus.program import TRAIN, Program
from mlbridge.llvm.outcomes import linked_code
from mlbridge.models import model_file
from mlbridge.native import plugin_path
from mlbridge.problems.inlining.size_training import (
    ValidationSet,
    validation_measure,
    validation_sample,
)
from mlbridge.problems.inlining.toolchain import compile_program, onnx_plugin
from mlbridge.training_log import read_training_log
from onnx import TensorProto, helper

DECISION = "inlining_decision"
DEFAULT = "inlining_default"
USERS = "callee_users"
BLOCKS = "callee_basic_block_count"
#: callee_users below this: a local function with one call
#: (FunctionPropertiesInfo's Uses).
LAST_CALL_USERS = 1.5


def _constant(name: str, value: float) -> onnx.NodeProto:
    tensor = helper.make_tensor(f"{name}_value", TensorProto.FLOAT, [1], [value])
    return helper.make_node("Constant", [], [name], value=tensor)


def _around(model: onnx.ModelProto, nodes: Sequence[onnx.NodeProto]) -> onnx.ModelProto:
    """``model`` with its answer renamed ``model_decision`` and ``nodes``
    (which compute ``inlining_decision`` from it and the inputs) appended;
    ``callee_basic_block_count`` becomes an input if they read it."""
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    graph = changed.graph
    for node in graph.node:
        for i, name in enumerate(node.output):
            if name == DECISION:
                node.output[i] = "model_decision"
    reads = {name for node in nodes for name in node.input}
    if BLOCKS in reads and BLOCKS not in {i.name for i in graph.input}:
        graph.input.append(helper.make_tensor_value_info(BLOCKS, TensorProto.INT64, [1]))
    graph.node.extend(nodes)
    onnx.checker.check_model(changed)
    return changed


def _last_call() -> List[onnx.NodeProto]:
    """Nodes computing ``last_call``: callee_users says a last call."""
    return [
        helper.make_node("Cast", [USERS], ["users"], to=TensorProto.FLOAT),
        _constant("last_call_users", LAST_CALL_USERS),
        helper.make_node("Less", ["users", "last_call_users"], ["last_call"]),
    ]


def deferring(model: onnx.ModelProto, at_last_call: bool) -> onnx.ModelProto:
    """``model`` answering LLVM's decision at last calls to static functions
    (``at_last_call``) or everywhere else, its own answer on the other side."""
    nodes = _last_call()
    if not at_last_call:
        nodes.append(helper.make_node("Not", ["last_call"], ["elsewhere"]))
    condition = "last_call" if at_last_call else "elsewhere"
    nodes.append(helper.make_node("Where", [condition, DEFAULT, "model_decision"], [DECISION]))
    return _around(model, nodes)


def declining(model: onnx.ModelProto, blocks: int, keep_model: bool) -> onnx.ModelProto:
    """The rule: decline the last call to a static function of at least
    ``blocks`` blocks; elsewhere the model's answer (``keep_model``) or
    LLVM's (the model's graph is then unused, its metadata dropped)."""
    nodes = _last_call() + [
        helper.make_node("Cast", [BLOCKS], ["blocks"], to=TensorProto.FLOAT),
        _constant("rule_blocks", blocks - 0.5),
        helper.make_node("Greater", ["blocks", "rule_blocks"], ["large"]),
        helper.make_node("And", ["last_call", "large"], ["decline"]),
        helper.make_node(
            "Constant",
            [],
            ["no"],
            value=helper.make_tensor("no_value", TensorProto.INT64, [1], [0]),
        ),
        helper.make_node(
            "Where", ["decline", "no", "model_decision" if keep_model else DEFAULT], [DECISION]
        ),
    ]
    changed = _around(model, nodes)
    if not keep_model:
        del changed.metadata_props[:]
    return changed


def declines_at_last_calls(log: Path) -> List[Dict[str, int]]:
    """The features of the logged call sites where the model declined
    LLVM's "inline" at a last call to a static function."""
    rows = []
    with open(log, "rb") as stream:
        for record in read_training_log(stream):
            values = {k: int(np.asarray(v).reshape(-1)[0]) for k, v in record.tensors.items()}
            if values[USERS] < LAST_CALL_USERS and values[DEFAULT] == 1 and not values[DECISION]:
                rows.append(values)
    return rows


def _sites(program: Program, out: Path, model: Path) -> List[Dict[str, Any]]:
    """The declines at last calls of ``model`` in ``program``: the callee's
    and the caller's size in blocks, and LLVM's cost estimate."""
    where = out / "logs" / program.name.replace("/", "_")
    log = where / "decisions.log"
    deployed = onnx_plugin(plugin_path(), model, {"MLBRIDGE_INLINE_LOG": str(log)})
    compile_program(program, where, deployed, 1)
    keys = (BLOCKS, "caller_basic_block_count", "caller_users", "cost_estimate")
    return [{k: row[k] for k in keys} for row in declines_at_last_calls(log)]


class TrainingUnits:
    """A fixed sample of the training units, each measured as linked."""

    def __init__(self, programs: Sequence[Program], per_project: int, out: Path, jobs: int):
        train = [p for p in programs if p.split == TRAIN]
        self.sample = validation_sample(train, per_project, 7)
        self.units = ValidationSet(self.sample, out / "training", jobs)
        self.oz = {p.name: linked_code(self.units.oz[p.name]) for p in self.sample}

    def sizes(self, model: Path) -> Dict[str, int]:
        code = self.units.code(model, plugin_path())
        return {p.name: linked_code(c) for p, c in zip(self.sample, code)}

    def summary(self, name: str, sizes: Dict[str, int]) -> Dict[str, Any]:
        oz, got = defaultdict(int), defaultdict(int)
        for p in self.sample:
            oz[p.project] += self.oz[p.name]
            got[p.project] += sizes[p.name]
        return {
            "training": name,
            "units": len(self.sample),
            "ratio": sum(got.values()) / sum(oz.values()),
            "units_smaller": sum(sizes[k] < v for k, v in self.oz.items()),
            "units_larger": sum(sizes[k] > v for k, v in self.oz.items()),
            "per_project": {k: round(got[k] / oz[k], 5) for k in sorted(oz) if got[k] != oz[k]},
        }


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="inlining-size", help="a shipped model or an ONNX file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--validation-units", type=int, default=40)
    parser.add_argument("--train-units-per-project", type=int, default=30)
    parser.add_argument("--rules", default="50,100,200", help="the rule's K, in blocks")
    args = parser.parse_args(argv)
    path = model_file(args.model)
    model = onnx.load(str(path))
    args.out.mkdir(parents=True, exist_ok=True)

    def saved(name: str, changed: onnx.ModelProto) -> Path:
        onnx.save(changed, str(args.out / f"{name}.onnx"))
        return args.out / f"{name}.onnx"

    programs = load_corpus(args.corpus, False)
    measure = validation_measure(
        programs, args.out, args.workers, None, None, args.validation_units, 0
    )
    if measure is None:
        raise SystemExit("the corpus names no validation programs")

    def validate(name: str, variant: Path) -> None:
        ratio, per_project = measure(variant)
        print(json.dumps({"validation": name, "ratio": ratio, "per_project": per_project}))

    elsewhere = saved("declines_elsewhere_only", deferring(model, True))
    validate("model", path)
    validate("declines_elsewhere_only", elsewhere)
    validate("last_calls_only", saved("last_calls_only", deferring(model, False)))

    training = TrainingUnits(programs, args.train_units_per_project, args.out, args.workers)
    with_model, without = training.sizes(path), training.sizes(elsewhere)
    print(json.dumps(training.summary("model", with_model)))
    print(json.dumps(training.summary("declines_elsewhere_only", without)))
    by_name = {p.name: p for p in training.sample}
    for name in sorted(with_model):
        delta = with_model[name] - without[name]
        if delta:
            sites = _sites(by_name[name], args.out, path)
            print(json.dumps({"unit": name, "bytes": delta, "sites": sites}))

    ratios = {}
    for blocks in (int(k) for k in args.rules.split(",")):
        rule = saved(f"rule-{blocks}", declining(model, blocks, False))
        summary = training.summary(f"rule-{blocks}", training.sizes(rule))
        ratios[blocks] = summary["ratio"]
        print(json.dumps(summary))
    best = min(ratios, key=lambda k: ratios[k])
    validate(f"rule-{best}", args.out / f"rule-{best}.onnx")
    validate(
        f"model-and-rule-{best}", saved(f"model-and-rule-{best}", declining(model, best, True))
    )


if __name__ == "__main__":
    main()

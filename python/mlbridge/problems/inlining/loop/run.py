"""The whole loop, scripted: ``mlbridge train inlining --method loop [--full] [--out DIR]``.

collect (interactive mode) -> train (numpy) -> ONNX -> mlbridge-aot ->
deploy in clang through the plugin -> measure on held-out programs ->
evolution strategies on size -> results.json, summary.md, training.png,
sizes.png in the output directory. The plugin is the native half's
(:mod:`mlbridge.native`) unless given; the programs: :mod:`mlbridge.corpus.defaults`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Dict, List, Optional, TextIO

import numpy as np

from mlbridge.aot.loadable import build_aot_module
from mlbridge.corpus import HELD_OUT, TRAIN, Program, split
from mlbridge.corpus.defaults import (
    CORPUS_VARIABLE,
    LOCAL_CORPUS,
    bundled_programs,
    default_corpus,
    load_corpus,
)
from mlbridge.errors import MlbridgeError
from mlbridge.llvm.versions import LlvmTools, tools
from mlbridge.native import plugin_path
from mlbridge.problems.inlining.imitation import agreement_by_program, train_imitation
from mlbridge.problems.inlining.loop.collect import collect
from mlbridge.problems.inlining.loop.evaluate import CONFIGURATIONS, evaluate
from mlbridge.problems.inlining.loop.report import Progress, plot_sizes, plot_training
from mlbridge.problems.inlining.loop.search import evolve
from mlbridge.problems.inlining.toolchain import compile_all, onnx_plugin


def _require_tools(compilers: LlvmTools) -> None:
    """MlbridgeError unless the loop's compilers are installed: clang, and
    the C++ compiler that builds the AOT module."""
    for tool in (compilers.clang, "c++"):
        if shutil.which(tool) is None:
            raise MlbridgeError(f"{tool} is not installed (scripts/setup installs it)")


def _programs(corpus: Optional[Path], quick: bool, stream: TextIO) -> List[Program]:
    """The programs of ``corpus`` (None: the default corpus) and the bundled
    ones; says on ``stream`` which are training and which held-out."""
    if corpus is None:
        corpus = default_corpus()
        if corpus is None:
            stream.write(
                f"loop: no corpus (no --corpus, ${CORPUS_VARIABLE} unset, "
                f"no ./{LOCAL_CORPUS}): the bundled demo programs only\n"
            )
    programs = load_corpus(corpus, quick)
    train, held_out = split(programs, TRAIN), split(programs, HELD_OUT)
    stream.write(
        f"loop: training programs: {', '.join(p.name for p in train)} "
        f"(demo-*: bundled, always training); held-out: "
        f"{', '.join(p.name for p in held_out) or 'none'}\n"
    )
    if not held_out:
        raise MlbridgeError(
            "no held-out program to measure on (the bundled demo programs "
            "are training programs): give --corpus PATH with your programs "
            f"(docs/corpus.md), set ${CORPUS_VARIABLE}, or fetch the reference "
            f"corpus into ./{LOCAL_CORPUS} (tools/fetch_corpus.py)"
        )
    return programs


def run_loop(
    out: Path,
    plugin: Optional[Path] = None,
    corpus: Optional[Path] = None,
    quick: bool = False,
    es_iterations: int = 8,
    jobs: int = 2,
    repeats: int = 1,
    configurations=CONFIGURATIONS,
    plugin_env: Optional[Dict[str, str]] = None,
    progress: Optional[Progress] = None,
    llvm: Optional[int] = None,
) -> Dict[str, Any]:
    """Runs every step; returns (and writes) the results. ``plugin``: the
    inline-advisor plugin (default: ``mlbridge config --plugin``);
    ``corpus``: a corpus in any format of :mod:`mlbridge.corpus` (default:
    :func:`mlbridge.corpus.defaults.default_corpus`); ``repeats``: rounds of the
    deployment measurements (compile times: the fastest round);
    ``plugin_env``: extra environment of compilers loading the plugin;
    ``llvm``: the LLVM major (default: the newest with mlbridge parts
    installed), whose clang and plugin are used."""
    compilers = tools(llvm, plugin)
    _require_tools(compilers)
    plugin = plugin if plugin is not None else plugin_path(llvm=compilers.major)
    if not plugin.is_file():
        raise MlbridgeError(
            f"the plugin {plugin} does not exist (scripts/setup builds it, or give --tool)"
        )
    progress = progress or Progress()
    programs = _programs(corpus, quick, progress.stream)
    train, held_out = split(programs, TRAIN), split(programs, HELD_OUT)
    out.mkdir(parents=True, exist_ok=True)

    data = collect(train, out / "logs", progress.step("collect"), compilers)
    np.savez(
        out / "dataset.npz",
        features=data.features,
        decisions=data.decisions,
        names=np.asarray(data.names),
    )
    policy, curve = train_imitation(data, progress=progress.step("train"))
    onnx_model = out / "policy.onnx"
    policy.to_onnx(onnx_model)
    module = build_aot_module(onnx_model, out / "aot")

    measured = evaluate(
        held_out,
        out / "objects",
        plugin,
        onnx_model,
        module,
        configurations,
        jobs,
        repeats,
        plugin_env,
        progress.step("deploy"),
        compilers,
    )

    trace, es_sizes = None, None
    if es_iterations > 0:
        oz_train = {
            r.program: r.text_bytes
            for r in compile_all(train, out / "objects" / "train-oz", None, jobs, llvm=compilers)
        }
        searched, _, trace = evolve(
            policy,
            train,
            plugin,
            oz_train,
            es_iterations,
            jobs=jobs,
            plugin_env=plugin_env,
            progress=progress.step("search"),
            llvm=compilers,
        )
        es_onnx = out / "es_policy.onnx"
        searched.to_onnx(es_onnx)
        es_sizes = compile_all(
            held_out,
            out / "objects" / "es",
            onnx_plugin(plugin, es_onnx, plugin_env),
            jobs,
            llvm=compilers,
        )

    results = _summarise(data, policy, curve, measured, trace, es_sizes, held_out)
    results["programs"] = {
        "train": [p.name for p in train],
        "held_out": [p.name for p in held_out],
        "bundled": [p.name for p in bundled_programs()],
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    sizes = {
        c: {r.program: r.text_bytes for r in rs} for c, rs in measured.items() if c in ("oz", "aot")
    }
    if es_sizes:
        sizes["es"] = {r.program: r.text_bytes for r in es_sizes}
    names = [p.name for p in held_out]
    plot_training(curve, trace, out / "training.png")
    plot_sizes(names, sizes, out / "sizes.png")
    (out / "summary.md").write_text(summary_markdown(results))
    return results


def _summarise(data, policy, curve, measured, trace, es_sizes, held_out) -> Dict[str, Any]:
    per_program: List[Dict[str, Any]] = []
    oz = {r.program: r for r in measured["oz"]}
    for p in held_out:
        row: Dict[str, Any] = {
            "program": p.name,
            "files": len(p.sources),
            "lines": p.lines,
            "oz_text": oz[p.name].text_bytes,
        }
        for config, rs in measured.items():
            r = next(r for r in rs if r.program == p.name)
            row[config] = r.figures()
        if es_sizes:
            row["es_text"] = next(r.text_bytes for r in es_sizes if r.program == p.name)
        per_program.append(row)

    def total(config: str, field: str) -> float:
        return float(sum(getattr(r, field) for r in measured[config]))

    totals: Dict[str, Any] = {}
    for config in measured:
        totals[config] = {
            "text_bytes": total(config, "text_bytes"),
            "cpu_seconds": total(config, "cpu_seconds"),
        }
        compared = total(config, "compared")
        if compared:
            totals[config]["agreement"] = total(config, "agreed") / compared
            totals[config]["fallbacks"] = total(config, "fallbacks")
    return {
        "training": {
            "call_sites": len(data),
            "features": policy.names,
            "final_loss": curve.loss[-1],
            "train_agreement": curve.train_agreement[-1],
            "validation_agreement": curve.validation_agreement[-1],
            "by_program": agreement_by_program(policy, data),
        },
        "held_out": per_program,
        "totals": totals,
        "search": None
        if trace is None
        else {
            "evaluations": trace.evaluations,
            "ratio": trace.ratio,
            "best_ratio": trace.best_ratio,
        },
    }


def _search_line(search: Optional[Dict[str, Any]]) -> List[str]:
    if not search or not search["ratio"]:
        return []
    return [
        f"Evolution strategies ({search['evaluations']} compilations of the training "
        f"programs): their .text / -Oz {search['ratio'][-1]:.4f} under the resulting "
        f"(mean) policy, {search['best_ratio'][-1]:.4f} under the best single "
        f"sample; held-out programs below (ES).\n"
    ]


def _programs_line(programs: Optional[Dict[str, List[str]]]) -> List[str]:
    if not programs:
        return []
    return [
        f"Training programs: {', '.join(programs['train'])} (the bundled demo programs, "
        f"{', '.join(programs['bundled'])}, are always training programs); held-out: "
        f"{', '.join(programs['held_out'])}.\n"
    ]


def summary_markdown(results: Dict[str, Any]) -> str:
    """The results as Markdown tables."""
    t = results["training"]
    lines = [
        "# mlbridge loop\n",
        f"Imitation: {t['call_sites']} call sites from the training programs, "
        f"{len(t['features'])} features; agreement train {t['train_agreement']:.4f}, "
        f"validation {t['validation_agreement']:.4f}.\n",
        *_programs_line(results.get("programs")),
        *_search_line(results["search"]),
        "| held-out program | lines | -Oz .text | aot .text | aot / -Oz | agreement |"
        + (" ES .text | ES / -Oz |" if results["search"] else ""),
        "|---|---|---|---|---|---|" + ("---|---|" if results["search"] else ""),
    ]
    for row in results["held_out"]:
        aot = row.get("aot")
        agreement = (aot["agreed"] / aot["compared"]) if aot and aot["compared"] else None
        line = (
            f"| {row['program']} | {row['lines']} | {row['oz_text']} | "
            f"{aot['text_bytes'] if aot else '-'} | "
            f"{aot['text_bytes'] / row['oz_text']:.4f} | "
            if aot
            else f"| {row['program']} | {row['lines']} | {row['oz_text']} | - | - | "
        )
        line += f"{agreement:.4f} |" if agreement is not None else "- |"
        if results["search"]:
            line += f" {row['es_text']} | {row['es_text'] / row['oz_text']:.4f} |"
        lines.append(line)
    lines += [
        "",
        "| configuration | total .text | compile CPU s | agreement | fallbacks |",
        "|---|---|---|---|---|",
    ]
    for config, v in results["totals"].items():
        lines.append(
            f"| {config} | {int(v['text_bytes'])} | {v['cpu_seconds']:.2f} | "
            f"{v.get('agreement', float('nan')):.4f} | "
            f"{int(v.get('fallbacks', 0))} |"
        )
    return "\n".join(lines) + "\n"

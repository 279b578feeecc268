"""The trained inlining policy deployed inside clang-19, measured.

Each held-out module is compiled by stock ``clang-19 -Oz -c`` three ways:
without a model (LLVM's own inliner), with the plugin running the ONNX
policy under ONNX Runtime, and with the plugin running the same policy
AOT-compiled to C++ (:func:`mlbridge.aot.loadable.build_aot_module`).
The report gives ``.text`` per module and in total, compile CPU time (the
fastest of ``repeats`` rounds, each round compiling the module every way
once, in an order rotated from round to round), and per project the code
of its modules counted as linked together (each COMDAT group once,
:func:`mlbridge.llvm.outcomes.linked_code`): what the linked program keeps
of C++ inline functions and templates that every object holds a copy of.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from mlbridge.aot.loadable import build_aot_module
from mlbridge.corpus.program import Program
from mlbridge.gym.modules import Module
from mlbridge.llvm.outcomes import CodeBytes, linked_code
from mlbridge.llvm.plugin_settings import InlinePluginSettings
from mlbridge.llvm.versions import LlvmTools, check_plugin_major, tools
from mlbridge.problems.inlining.toolchain import (
    OPT_LEVEL,
    Plugin,
    ProgramResult,
    compile_program,
    onnx_plugin,
)
from mlbridge.runner_config import RunnerConfig
from mlbridge.session.plugin_settings import INLINE_ADVISOR
from mlbridge.validation import Build

#: The configurations compared, in report order.
CONFIGS = ("-Oz", "onnx", "aot")


def deployment_plugins(
    plugin: Path, policy: Path, work: Path, class_name: str = "PpoInlinePolicy"
) -> Dict[str, Optional[Plugin]]:
    """The configurations of :data:`CONFIGS`: no plugin (``-Oz``), the plugin
    running ``policy`` under ONNX Runtime, and under AOT (compiled into
    ``work / "aot"`` as class ``class_name``)."""
    aot = build_aot_module(policy, work / "aot", class_name=class_name)
    return {
        "-Oz": None,
        "onnx": onnx_plugin(plugin, policy),
        "aot": Plugin(
            plugin, InlinePluginSettings(RunnerConfig(kind="aot", argument=str(aot))).environment()
        ),
    }


def rounds(configs: Sequence[str], repeats: int) -> List[Tuple[str, ...]]:
    """The order of the configurations in each of ``repeats`` rounds: every
    one once a round, the first of a round last in the next, so that a slow
    spell of the machine falls on all of them alike and none always goes
    first (a cold cache) or last."""
    return [
        tuple(configs[r % len(configs) :]) + tuple(configs[: r % len(configs)])
        for r in range(repeats)
    ]


def evaluate_inlining(
    policy: Path,
    modules: Sequence[Module],
    plugin: Path,
    work: Path,
    repeats: int = 1,
    llvm: Optional[LlvmTools] = None,
) -> Dict[str, Any]:
    """Per module and in total: allocated and ``.text`` bytes and compile
    CPU seconds of each configuration (with the clang of ``llvm``, which
    ``plugin`` was built for), and the policy's size ratios to ``-Oz``; per
    project, the code of its modules linked together."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    llvm = llvm or tools()
    plugins = deployment_plugins(plugin, policy, work)
    rows: List[Dict[str, Any]] = []
    linked: Dict[str, Dict[str, List[CodeBytes]]] = defaultdict(lambda: defaultdict(list))
    for module in modules:
        program = Program(
            module.name, (module.bitcode,), tuple(module.codegen_flags()), module.split
        )
        row: Dict[str, Any] = {"module": module.name}
        fastest: Dict[str, ProgramResult] = {}
        for r, order in enumerate(rounds(CONFIGS, repeats)):
            for name in order:
                out = work / "objects" / name / f"{program.dirname}-{r}"
                result = compile_program(program, out, plugins[name], jobs=1, llvm=llvm)
                if name not in fastest or result.cpu_seconds < fastest[name].cpu_seconds:
                    fastest[name] = result
        for name in CONFIGS:
            best = fastest[name]
            linked[program.project][name] += best.code
            row[name] = {
                "allocated": best.allocated_bytes,
                "text": best.text_bytes,
                "cpu_seconds": round(best.cpu_seconds, 4),
            }
            if name != "-Oz":
                row[name]["fallbacks"] = best.fallbacks
        row["ratio_to_oz"] = row["onnx"]["text"] / max(1, row["-Oz"]["text"])
        row["allocated_ratio_to_oz"] = row["onnx"]["allocated"] / max(1, row["-Oz"]["allocated"])
        rows.append(row)
    totals = {
        name: {
            "allocated": sum(r[name]["allocated"] for r in rows),
            "text": sum(r[name]["text"] for r in rows),
            "cpu_seconds": round(sum(r[name]["cpu_seconds"] for r in rows), 3),
        }
        for name in CONFIGS
    }
    oz = max(1, totals["-Oz"]["text"])
    oz_allocated = max(1, totals["-Oz"]["allocated"])
    projects = {
        project: {name: linked_code(code[name]) for name in CONFIGS}
        for project, code in sorted(linked.items())
    }
    linked_oz = max(1, sum(p["-Oz"] for p in projects.values()))
    linked_vs_oz = {name: sum(p[name] for p in projects.values()) / linked_oz for name in CONFIGS}
    return {
        "modules": rows,
        "totals": totals,
        "allocated_vs_oz": {name: totals[name]["allocated"] / oz_allocated for name in CONFIGS},
        "text_vs_oz": {name: totals[name]["text"] / oz for name in CONFIGS},
        "projects": {
            project: {**sizes, "linked_ratio_to_oz": sizes["onnx"] / max(1, sizes["-Oz"])}
            for project, sizes in projects.items()
        },
        "linked_vs_oz": linked_vs_oz,
        "compile_time_vs_oz": {
            name: totals[name]["cpu_seconds"] / max(1e-9, totals["-Oz"]["cpu_seconds"])
            for name in CONFIGS
        },
        "aot_equals_onnx": all(
            r["aot"][size] == r["onnx"][size] for r in rows for size in ("allocated", "text")
        ),
        "summary": [
            f"{name:5s} allocated {totals[name]['allocated']:>9d} bytes "
            f"{totals[name]['allocated'] / oz_allocated:.4f}x -Oz, "
            f".text {totals[name]['text']:>9d} bytes {totals[name]['text'] / oz:.4f}x "
            "(linked per project "
            f"{linked_vs_oz[name]:.4f}x), "
            f"compile CPU {totals[name]['cpu_seconds']} s"
            for name in CONFIGS
        ],
    }


def deployed_build(
    policy: Path, plugin: Optional[Path] = None, llvm: Optional[int] = None
) -> Build:
    """How ``mlbridge validate`` builds a program with ``policy`` deployed:
    ``clang -Oz`` of LLVM ``llvm`` (default: the newest installed) with the
    plugin (default: ``mlbridge config --plugin --llvm N``) running the
    policy under ONNX Runtime, its statistics asked for."""
    from mlbridge.native import plugin_path

    compilers = tools(llvm)
    plugin = plugin or plugin_path(llvm=compilers.major)
    check_plugin_major(compilers.clang, plugin, compilers.major)
    settings = InlinePluginSettings(RunnerConfig(kind="onnx", argument=str(policy)))
    return Build(
        f"{compilers.clang} {OPT_LEVEL}, inlining by {policy.name}",
        (compilers.clang, OPT_LEVEL, *Plugin(plugin).flags()),
        settings.environment(),
        INLINE_ADVISOR.variable("stats"),
        compilers.clangxx,
        (plugin.resolve().parent, policy.resolve()),
    )


def evaluate_trained(
    policy: Path,
    modules: Sequence[Module],
    work: Path,
    plugin: Optional[Path],
    llvm: Optional[int] = None,
) -> Dict[str, Any]:
    """:func:`evaluate_inlining` as ``mlbridge train`` runs it: clang of LLVM
    ``llvm`` (default: the newest installed) and the plugin of ``mlbridge
    config --plugin --llvm N`` unless given, fastest of 3 rounds."""
    from mlbridge.native import plugin_path

    compilers = tools(llvm)
    plugin = plugin or plugin_path(llvm=compilers.major)
    return evaluate_inlining(policy, modules, plugin, work, repeats=3, llvm=compilers)

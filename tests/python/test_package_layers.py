"""The packages of ``mlbridge`` form layers (docs/architecture.md): no
package imports one of a layer above its own, and no import cycle between them
(each subpackage, each problem's folder and each top-level module is one
node; every import statement counts, those inside functions too). No problem
imports another (test_problems.py: reading the registry loads no problem's
environment)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Set

import mlbridge

ROOT = Path(mlbridge.__file__).parent
#: Generated protobuf code, outside the layering.
SKIP = {"v1"}


#: The problems' folders.
PROBLEM_FOLDERS = sorted(p.parent.name for p in (ROOT / "problems").glob("*/__init__.py"))


def node_of(module: str) -> Optional[str]:
    """``mlbridge.x.y`` -> ``x`` (a subpackage or a top-level module), or
    ``problems.NAME`` for a problem's folder."""
    parts = module.split(".")
    if parts[0] != "mlbridge" or len(parts) < 2 or parts[1] in SKIP:
        return None
    if parts[1] == "problems" and len(parts) > 2 and parts[2] in PROBLEM_FOLDERS:
        return f"problems.{parts[2]}"
    return parts[1]


def import_graph() -> Dict[str, Dict[str, str]]:
    """node -> {imported node: where the first such import is}."""
    graph: Dict[str, Dict[str, str]] = defaultdict(dict)
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in SKIP:
            continue
        source = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        if source == "problems" and len(relative.parts) > 2:
            source = f"problems.{relative.parts[1]}"
        for item in ast.walk(ast.parse(path.read_text("utf-8"))):
            targets: List[Optional[str]] = []
            if isinstance(item, ast.ImportFrom) and item.level == 0 and item.module:
                if item.module == "mlbridge":
                    targets = [node_of(f"mlbridge.{a.name}") for a in item.names]
                else:
                    targets = [node_of(item.module)]
            elif isinstance(item, ast.Import):
                targets = [node_of(a.name) for a in item.names]
            for target in targets:
                if target is not None and target != source:
                    graph[source].setdefault(target, f"{relative}:{item.lineno}")
    return graph


def cycle_through(graph: Dict[str, Dict[str, str]], start: str) -> Optional[List[str]]:
    """A path start -> ... -> start, if any."""
    stack = [(start, [start])]
    seen: Set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in graph.get(node, {}):
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def test_the_packages_have_no_import_cycle():
    graph = import_graph()
    assert graph["train"] and graph["gym"] and graph["problems.inlining"], "the graph was not read"
    cycles = []
    for start in sorted(graph):
        path = cycle_through(graph, start)
        if path is not None:
            steps = [f"{a} -> {b} ({graph[a][b]})" for a, b in zip(path, path[1:])]
            cycles.append("; ".join(steps))
    assert not cycles, "\n".join(cycles)


#: What the problem registry may import: tensor specs (the problems'
#: folders are found, not imported by name).
REGISTRY_IMPORTS = {"tensor_spec"}
#: What the environments, training and the compiler drivers are.
UPPER_LAYERS = {"gym", "train", "llvm", "corpus", "problems", "cli"}


def test_the_problem_registry_is_a_bottom_layer():
    graph = import_graph()
    assert set(graph["problems"]) <= REGISTRY_IMPORTS, graph["problems"]
    for package in ("gcc", "mlir"):
        assert not set(graph.get(package, {})) & UPPER_LAYERS, (package, graph[package])


def test_no_problem_imports_another():
    graph = import_graph()
    crossing = [
        f"{source} imports {target} at {where}"
        for source, targets in sorted(graph.items())
        if source.startswith("problems.")
        for target, where in sorted(targets.items())
        if target.startswith("problems.")
    ]
    assert not crossing, "\n".join(crossing)


#: The documented order (docs/architecture.md, Layers), bottom first: a
#: package imports packages of its own layer or of a lower one only.
LAYERS: List[Set[str]] = [
    # The core: errors, values, files, processes, tensors, policies in Python.
    {
        "__init__",
        "__version__",
        "_version",
        "errors",
        "cli_errors",
        "limits",
        "jsontext",
        "input_files",
        "output_files",
        "child_process",
        "session",
        "program_runs",
        "tensor_spec",
        "policy",
        "runner_config",
        "native",
        "framing",
        "linear_policy",
        "plugin_logs",
        "run_stats",
        "plugin_description",
        "onnx_policy",
        "onnx_tools",
    },
    # Formats and transports, the AOT compiler, the shipped models.
    {
        "codecs",
        "training_log",
        "channel",
        "shared_memory",
        "pipe_host",
        "grpc_client",
        "grpc_sessions",
        "grpc_server",
        "grpc_driver",
        "policies",
        "models",
        "aot",
    },
    # The GCC and MLIR plugins' declarations of their features and answers.
    {"gcc", "mlir"},
    # The problem registry.
    {"problems"},
    # Compilers and corpora.
    {"llvm", "corpus"},
    # Environments.
    {"gym"},
    # Training, export, deployment.
    {"train", "validation"},
    # The problems' folders: environment, deployment, score, trainers.
    {f"problems.{name}" for name in PROBLEM_FOLDERS},
    # The command line.
    {"cli", "__main__"},
]


def _layer_of(node: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if node in layer)


def test_every_package_has_one_layer():
    graph = import_graph()
    nodes = set(graph) | {n for targets in graph.values() for n in targets}
    placed = [n for layer in LAYERS for n in layer]
    assert len(placed) == len(set(placed)), "a package is in two layers"
    assert not nodes - set(placed), f"place these in LAYERS: {sorted(nodes - set(placed))}"


def test_no_package_imports_one_above_it():
    graph = import_graph()
    upward = [
        f"{source} (layer {_layer_of(source)}) imports {target} (layer {_layer_of(target)}) "
        f"at {where}"
        for source, targets in sorted(graph.items())
        for target, where in sorted(targets.items())
        if _layer_of(target) > _layer_of(source)
    ]
    assert not upward, "\n".join(upward)

"""No import cycle anywhere in the mlbridge package.

The modules of ``python/mlbridge`` are parsed (never imported) and every
``import``/``from ... import`` statement between two of them is an edge,
wherever it stands: at the top, inside a function (a lazy import only hides a
cycle until the call) or under ``if TYPE_CHECKING:``. ``from pkg import name``
is an edge to the submodule ``pkg.name`` when there is one, else to ``pkg``
itself. The implicit import of a module's parent packages is not an edge (a
package's ``__init__`` that re-exports its submodules is not a cycle).

Also checks the seams issue 12 drew: no module of the package takes the policy
helpers from the pipe transport (they live in :mod:`mlbridge.policy`), and the
pipe host still re-exports them for older code.

Run as a script to print the import cycles: ``python tests/python/test_import_graph.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "python" / "mlbridge"
#: Names :mod:`mlbridge.policy` owns and :mod:`mlbridge.pipe_host` only re-exports.
POLICY_NAMES = (
    "DecisionFn",
    "Policy",
    "Session",
    "as_decision_fn",
    "output_array",
    "output_arrays",
    "output_bytes",
    "scalar_packer",
    "takes_context",
)


def module_files(package_dir: Path = PACKAGE_DIR) -> Dict[str, Path]:
    """Dotted module name -> source file, for every module under ``package_dir``."""
    root = package_dir.parent
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(
    module: str, is_package: bool, tree: ast.AST, modules: Dict[str, Path]
) -> Iterator[str]:
    """The modules of ``modules`` that the statements of ``tree`` import."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:
                    yield submodule
                elif base in modules:
                    yield base


def import_graph(package_dir: Path = PACKAGE_DIR) -> Dict[str, Set[str]]:
    """Module -> the package's modules it imports (itself excluded)."""
    modules = module_files(package_dir)
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = set(_imported(name, path.name == "__init__.py", tree, modules)) - {name}
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """One cycle (``[a, b, ..., a]``) per strongly connected component of
    more than one module (Tarjan's algorithm, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for succ in edges:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return [_cycle_in(graph, set(component)) for component in components]


def _cycle_in(graph: Dict[str, Set[str]], component: Set[str]) -> List[str]:
    """A shortest cycle through the first module of a strongly connected component."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node] & component):
                if succ == start:
                    return paths[node] + [start]
                if succ not in paths:
                    paths[succ] = paths[node] + [succ]
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def test_the_parser_sees_the_package():
    graph = import_graph()
    assert "mlbridge.policy" in graph and "mlbridge.aot.ops.common" in graph
    assert "mlbridge.policy" in graph["mlbridge.pipe_host"]
    assert "mlbridge.onnx_policy" in graph["mlbridge.policies"]  # a lazy import counts
    assert "mlbridge.aot.budget" in graph["mlbridge.aot.graph"]  # from mlbridge.aot import budget


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_package():
    found = cycles(import_graph())
    assert not found, "import cycles in python/mlbridge:\n" + "\n".join(
        " -> ".join(cycle) for cycle in found
    )


def test_no_module_takes_policy_helpers_from_the_pipe_transport():
    offenders = []
    for name, path in module_files().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "mlbridge.pipe_host":
                taken = sorted({a.name for a in node.names} & set(POLICY_NAMES))
                if taken:
                    offenders.append(f"{name}:{node.lineno} imports {', '.join(taken)}")
    assert not offenders, (
        "import these from mlbridge.policy, not mlbridge.pipe_host:\n" + "\n".join(offenders)
    )


def test_the_policy_helpers_are_exported_by_mlbridge_policy_only():
    """No compatibility re-exports (the package is unreleased)."""
    import mlbridge.pipe_host as pipe_host
    import mlbridge.policy as policy

    for name in POLICY_NAMES:
        assert name in policy.__all__ and name not in pipe_host.__all__, name


if __name__ == "__main__":
    FOUND = cycles(import_graph())
    for CYCLE in FOUND:
        print(" -> ".join(CYCLE))
    sys.exit(1 if FOUND else 0)

"""Graph rewrites before code generation."""

from __future__ import annotations

import numpy as np

from mlbridge.aot.ir import Graph, Node
from mlbridge.aot.ops import OPERATORS


def _dense_with_row_bias(node: Node) -> bool:
    """A Gemm/MatMul whose whole epilogue runs inside the dense kernel."""
    if node.outputs[0].dtype != np.float32 or node.inputs[1].const is None:
        return False
    if node.op == "MatMul":
        return len(node.inputs[1].shape) == 2
    c = node.input(2)
    return c is None or (c.const is not None and (len(c.shape) < 2 or c.shape[0] == 1))


def fuse_relu(graph: Graph) -> None:
    """Folds a Relu that is the only reader of a dense layer into the layer."""
    readers: dict = {}
    for node in graph.nodes:
        for v in node.inputs:
            if v is not None:
                readers.setdefault(id(v), []).append(node)
    results = {id(v) for v in graph.results}
    dropped = set()
    for node in graph.nodes:
        if node.op not in ("Gemm", "MatMul") or not _dense_with_row_bias(node):
            continue
        out = node.outputs[0]
        users = readers.get(id(out), [])
        if len(users) != 1 or users[0].op != "Relu" or id(out) in results:
            continue
        relu = users[0]
        node.fused["relu"] = True
        node.outputs[0] = relu.outputs[0]
        dropped.add(id(relu))
    graph.nodes = [n for n in graph.nodes if id(n) not in dropped]


def mark_sparse_inputs(graph: Graph) -> None:
    """Marks dense layers whose input is a ReLU's output (a Relu node or a
    layer with a fused Relu, possibly through views): their kernel may skip
    the zero entries."""
    after_relu: set = set()
    for node in graph.nodes:
        if (
            node.op in ("Gemm", "MatMul")
            and node.inputs[0] is not None
            and id(node.inputs[0]) in after_relu
        ):
            node.fused["sparse_input"] = True
        if (
            node.op == "Relu"
            or node.fused.get("relu")
            or (OPERATORS[node.op].view and id(node.inputs[0]) in after_relu)
        ):
            after_relu.update(id(o) for o in node.outputs)

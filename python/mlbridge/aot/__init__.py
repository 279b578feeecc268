"""mlbridge-aot: compiles an ONNX model ahead of time into a self-contained
C++17 header and source (weights embedded, standard library only).

    from mlbridge.aot import compile_model
    generated = compile_model("policy.onnx", class_name="InlinerPolicy")
    generated.write("out/")   # out/InlinerPolicy.h, out/InlinerPolicy.cpp

The generated class plugs into mlbridge's runner API
(``mlbridge::AotModelRunner<InlinerPolicy>``) and exposes LLVM's embedded
model interfaces (XLA-style ``LookupArgIndex``/``arg_data``/``Run``, EmitC
style ``getBufferForName``/``operator()``). Supported operators:
:func:`supported_ops`. An unsupported operator, a dynamic shape or an
unsupported type raises :class:`AotError` naming the node or tensor.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from mlbridge.aot.emit import GeneratedModel, generate
from mlbridge.aot.graph import AotError, Graph, load_graph
from mlbridge.aot.optimize import fuse_relu, mark_sparse_inputs


def supported_ops() -> str:
    """The ONNX operators mlbridge-aot compiles."""
    from mlbridge.aot.ops import supported_ops as ops
    return ops()


def default_class_name(path: str) -> str:
    """``inliner_policy.onnx`` -> ``InlinerPolicy``."""
    words = re.split(r"[^0-9A-Za-z]+", Path(path).stem)
    name = "".join(w[:1].upper() + w[1:] for w in words if w)
    return name if name and not name[0].isdigit() else "Model" + name


def compile_model(model: Any, class_name: Optional[str] = None,
                  namespace: str = "mlbridge_models",
                  input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                  header_name: Optional[str] = None) -> "Generated":
    """Compiles ``model`` (path, bytes or onnx.ModelProto)."""
    graph = load_graph(model, input_shapes)
    fuse_relu(graph)
    mark_sparse_inputs(graph)
    if class_name is None:
        class_name = default_class_name(str(model)) if isinstance(model, (str, Path)) \
            else "Model"
    label = Path(model).name if isinstance(model, (str, Path)) else graph.name
    return Generated(generate(graph, class_name, namespace,
                              header_name or f"{class_name}.h", label), graph)


class Generated:
    """Generated code of one model; ``write(dir)`` saves header and source."""

    def __init__(self, model: GeneratedModel, graph: Graph) -> None:
        self.model = model
        self.graph = graph

    @property
    def header(self) -> str:
        return self.model.header

    @property
    def source(self) -> str:
        return self.model.source

    def write(self, out_dir: Any, stem: Optional[str] = None) -> tuple:
        """Writes ``<stem>.h`` and ``<stem>.cpp`` (stem: the class name) into
        ``out_dir``; rewrites files only when their content changes (keeps
        build systems from recompiling). Returns both paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = stem or Path(self.model.header_name).stem
        paths = (out / f"{stem}.h", out / f"{stem}.cpp")
        for path, text in zip(paths, (self.header, self.source)):
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
        return paths


__all__ = ["AotError", "Generated", "compile_model", "default_class_name",
           "supported_ops"]

"""mlbridge-aot: compiles an ONNX model ahead of time into a self-contained
C++17 header and source (weights embedded, standard library only).

    from mlbridge.aot import compile_model
    generated = compile_model("policy.onnx", class_name="InlinerPolicy")
    generated.write("out/")   # out/InlinerPolicy.h, out/InlinerPolicy.cpp
                              # (+ out/InlinerPolicy.weights.bin: big weights)

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

from mlbridge.aot.budget import DEFAULT_MAX_MEMORY
from mlbridge.aot.emit import GeneratedModel, generate
from mlbridge.aot.errors import AotError
from mlbridge.aot.graph import load_graph
from mlbridge.aot.ir import Graph
from mlbridge.aot.optimize import fuse_relu, mark_sparse_inputs
from mlbridge.aot.weights import DEFAULT_INLINE_LIMIT, incbin_path


def supported_ops() -> str:
    """The ONNX operators mlbridge-aot compiles."""
    from mlbridge.aot.ops import supported_ops as ops

    return ops()


def default_class_name(path: str) -> str:
    """``inliner_policy.onnx`` -> ``InlinerPolicy``."""
    words = re.split(r"[^0-9A-Za-z]+", Path(path).stem)
    name = "".join(w[:1].upper() + w[1:] for w in words if w)
    return name if name and not name[0].isdigit() else "Model" + name


def compile_model(
    model: Any,
    class_name: Optional[str] = None,
    namespace: str = "mlbridge_models",
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    header_name: Optional[str] = None,
    inline_weights_limit: Optional[int] = None,
    max_memory: Optional[int] = None,
) -> "Generated":
    """Compiles ``model`` (path, bytes or onnx.ModelProto). Constants of more
    than ``inline_weights_limit`` bytes in all (default
    :data:`DEFAULT_INLINE_LIMIT`) go to a weights file; every tensor, and the
    model's buffers and constants together, must fit ``max_memory`` bytes
    (default :data:`DEFAULT_MAX_MEMORY`)."""
    graph = load_graph(model, input_shapes, max_memory)
    fuse_relu(graph)
    mark_sparse_inputs(graph)
    if class_name is None:
        class_name = default_class_name(str(model)) if isinstance(model, (str, Path)) else "Model"
    label = Path(model).name if isinstance(model, (str, Path)) else graph.name
    return Generated(
        generate(
            graph,
            class_name,
            namespace,
            header_name or f"{class_name}.h",
            label,
            inline_weights_limit,
            max_memory,
        ),
        graph,
    )


class Generated:
    """Generated code of one model; ``write(dir)`` saves header and source
    (and the weights file, when the constants are not inline)."""

    def __init__(self, model: GeneratedModel, graph: Graph) -> None:
        self.model = model
        self.graph = graph

    @property
    def header(self) -> str:
        return self.model.header

    @property
    def source(self) -> str:
        """The source (a weights file named relative to the include path;
        :meth:`write` writes its absolute path)."""
        return self.model.source

    @property
    def weights(self) -> bytes:
        """The contents of the weights file; empty when the constants are
        inline arrays."""
        return self.model.weights.data if self.model.weights else b""

    def write(
        self, out_dir: Any, stem: Optional[str] = None, always_write_weights: bool = False
    ) -> tuple:
        """Writes ``<stem>.h``, ``<stem>.cpp`` (stem: the header's) and, when
        the constants are not inline (or ``always_write_weights``: a build
        system wanting a fixed set of outputs), ``<stem>.weights.bin``, whose
        absolute path the source names, into ``out_dir``. Rewrites files only
        when their content changes (keeps build systems from recompiling).
        Returns the paths of the header and the source."""
        out = Path(out_dir)
        stem = stem or Path(self.model.header_name).stem
        paths = (out / f"{stem}.h", out / f"{stem}.cpp")
        weights = out / f"{stem}.weights.bin"
        source = self.model.source_for(incbin_path(weights) if self.model.weights else weights.name)
        out.mkdir(parents=True, exist_ok=True)
        files = [(weights, self.weights)] if self.model.weights or always_write_weights else []
        files += [(paths[0], self.header.encode()), (paths[1], source.encode())]
        for path, data in files:
            if not path.exists() or path.read_bytes() != data:
                path.write_bytes(data)
        return paths


__all__ = [
    "AotError",
    "DEFAULT_INLINE_LIMIT",
    "DEFAULT_MAX_MEMORY",
    "Generated",
    "compile_model",
    "default_class_name",
    "supported_ops",
]

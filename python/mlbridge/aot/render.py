"""Fills the header and source templates of a model whose run function has
been emitted (:mod:`mlbridge.aot.emit`): storage layout, tensor tables,
accessors, lookups, constants, the static memory budget."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, Optional, Sequence, Tuple

from mlbridge.aot import budget, cxx, runfn
from mlbridge.aot.graph import CXX_TYPES, SPEC_TYPES, Graph, Value
from mlbridge.aot.templates import AOT_ABI_V1, HEADER, SOURCE
from mlbridge.aot.weights import WeightsFile


@dataclass
class GeneratedModel:
    """The generated files of one model."""

    class_name: str
    namespace: str
    header_name: str
    header: str
    #: The source, without the assembly block of the weights file.
    source_text: str
    #: The constants as a file, or None when they are inline arrays.
    weights: Optional[WeightsFile] = None

    def source_for(self, weights_path: str) -> str:
        """The source, pulling the weights file in from ``weights_path`` (a
        path from :func:`mlbridge.aot.weights.incbin_path`)."""
        if self.weights is None:
            return self.source_text
        return self.source_text + "\n" + self.weights.asm(weights_path)

    @property
    def weights_name(self) -> str:
        """``<stem>.weights.bin``, next to the header."""
        stem = self.header_name.rsplit(".", 1)[0]
        return f"{stem}.weights.bin"

    @property
    def source(self) -> str:
        """The source; a weights file is named relative to the include path."""
        return self.source_for(self.weights_name)


def _shape_list(shape: Sequence[int]) -> str:
    return "{" + ", ".join(str(int(d)) for d in shape) + "}" if shape else "{0}"


def _describe(v: Value) -> str:
    """``'name' (float [1, 64])`` for a comment."""
    return f"'{cxx.comment(v.name)}' ({SPEC_TYPES[v.dtype]} {list(v.shape)})"


def _accessors(args: Sequence[Value], results: Sequence[Value]) -> str:
    """arg_feed_<name>_data() / result_fetch_<name>_data(): identifiers
    derived from the names, unique within each kind."""
    out = []
    for kind, values, prefix, member, array in (
            ("input", args, "feed_", "arg", "ArgData"),
            ("output", results, "fetch_", "result", "ResultData")):
        taken: set = set()
        for i, v in enumerate(values):
            ident = cxx.unique_identifier(prefix + v.name, taken)
            t = CXX_TYPES[v.dtype]
            out.append(f"  /// Buffer of {kind} {_describe(v)}.\n"
                       f"  {t} *{member}_{ident}_data() {{\n"
                       f"    return static_cast<{t} *>({array}[{i}]);\n  }}")
    return "\n".join(out)


def _tables(args: Sequence[Value], results: Sequence[Value]) -> Dict[str, str]:
    """Tensor descriptions, shapes and name lookups of the source."""
    def info_rows(values: Sequence[Value], kind: str) -> str:
        rows = [f"    {{{cxx.string_literal(v.name)}, {cxx.string_literal(SPEC_TYPES[v.dtype])}, "
                f"{len(v.shape)}, {kind}Shape{i}, {v.size}u, {v.nbytes}u}},"
                for i, v in enumerate(values)]
        return "\n".join(rows) or "    {nullptr, nullptr, 0, nullptr, 0u, 0u},"

    def c_rows(values: Sequence[Value], kind: str) -> str:
        rows = [f"    {{{cxx.string_literal(v.name)}, {cxx.string_literal(SPEC_TYPES[v.dtype])}, "
                f"{len(v.shape)}, {kind}Shape{i}}}," for i, v in enumerate(values)]
        return "\n".join(rows) or "    {nullptr, nullptr, 0, nullptr},"

    def lookup(values: Sequence[Value], prefix: str) -> str:
        return "\n".join(f"  if (Name == {cxx.string_literal(v.name)} || "
                         f"Name == {cxx.string_literal(prefix + v.name)})\n    return {i};"
                         for i, v in enumerate(values))

    shapes = [f"constexpr std::int64_t {kind}Shape{i}[] = {_shape_list(v.shape)};"
              for kind, values in (("Arg", args), ("Result", results))
              for i, v in enumerate(values)]
    return dict(arg_info=info_rows(args, "Arg"), result_info=info_rows(results, "Result"),
                c_args=c_rows(args, "Arg"), c_results=c_rows(results, "Result"),
                lookup_args=lookup(args, "feed_"), lookup_results=lookup(results, "fetch_"),
                shape_decls="\n".join(shapes))


def _layout(args: Sequence[Value], results: Sequence[Value]) -> Tuple[list, list, int]:
    """Offsets of the argument and result buffers in the storage, and the
    offset of the scratch arena after them."""
    offsets: Dict[str, list] = {"arg": [], "result": []}
    top = 0
    for kind, values in (("arg", args), ("result", results)):
        for v in values:
            offsets[kind].append(top)
            top += cxx.aligned_size(v.nbytes)
    return offsets["arg"], offsets["result"], top


def render(graph: Graph, em: Any, arena_bytes: int, class_name: str, namespace: str,
           header_name: str, source_label: str, inline_limit: int,
           max_memory: int) -> GeneratedModel:
    """The :class:`GeneratedModel` of ``graph``, whose run function ``em``
    (an :class:`~mlbridge.aot.emit.Emitter`) holds."""
    args, results = graph.args, graph.results
    arg_offsets, result_offsets, scratch_offset = _layout(args, results)
    storage = max(scratch_offset + arena_bytes, 1)
    budget.static_memory(f"the model '{cxx.comment(graph.name)}'", storage,
                         em.pool.nbytes, max_memory)
    c_symbol = cxx.identifier(f"{namespace.replace('::', '_')}_{class_name}_model")
    label = cxx.comment(source_label)
    header = HEADER.format(
        abi=AOT_ABI_V1, c_symbol=c_symbol,
        guard=cxx.identifier(f"{namespace}_{class_name}_H").upper(), source=label,
        namespace=namespace, cls=class_name, num_args=len(args),
        num_results=len(results), storage=storage, accessors=_accessors(args, results),
        arg_slots=max(len(args), 1), result_slots=max(len(results), 1))

    weights_file, weights_decls, weights_check = None, "", ""
    if em.pool.nbytes <= inline_limit:
        const_decls = em.pool.inline_decls()
    else:
        weights_file, weights_decls = em.pool.weights_file(c_symbol)
        const_decls = ""
        weights_check = ("  if (!weightsMatch())\n"
                         "    RunImpl = runWithOtherWeights;\n")
    tables = _tables(args, results)
    source = SOURCE.format(
        header_name=header_name, source=label,
        kernels=resources.files("mlbridge.aot").joinpath("kernels.h").read_text(),
        weights_decls=weights_decls,
        outline="#define MLBRIDGE_AOT_OUTLINE_KERNELS 1\n" if runfn.outline(em.nodes) else "",
        decls="\n\n".join(d for d in [const_decls] + em.decls + [tables.pop("shape_decls")]
                          if d),
        run=runfn.render(em.nodes, [CXX_TYPES[v.dtype] for v in args],
                         [CXX_TYPES[v.dtype] for v in results]),
        weights_check=weights_check,
        namespace=namespace, cls=class_name, scratch_offset=scratch_offset,
        arg_offsets=", ".join(map(str, arg_offsets or [0])),
        result_offsets=", ".join(map(str, result_offsets or [0])),
        num_args=len(args), num_results=len(results),
        c_symbol=c_symbol, c_name=cxx.string_literal(class_name), **tables)
    return GeneratedModel(class_name, namespace, header_name, header, source, weights_file)

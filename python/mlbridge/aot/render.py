"""Writes the header and source of a model whose run function has been
emitted (:mod:`mlbridge.aot.emit`) as planned (:mod:`mlbridge.aot.plan`): the
templates of :mod:`mlbridge.aot.templates` filled with the names, the storage
layout, the tensor tables, accessors and lookups, the constants and the run
function. Nothing is decided here but the spelling."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Dict, Optional, Sequence

from mlbridge.aot import cxx, runfn, templates
from mlbridge.aot.ir import CXX_TYPES, SPEC_TYPES, Graph, Value
from mlbridge.aot.plan import Layout, Names
from mlbridge.aot.runfn import NodeCode
from mlbridge.aot.templates import AOT_ABI_V1
from mlbridge.aot.weights import ConstantPool, WeightsFile


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
        ("output", results, "fetch_", "result", "ResultData"),
    ):
        taken: set = set()
        for i, v in enumerate(values):
            out.append(
                templates.snippet(
                    "accessor.h.in",
                    kind=kind,
                    description=_describe(v),
                    type=CXX_TYPES[v.dtype],
                    member=member,
                    ident=cxx.unique_identifier(prefix + v.name, taken),
                    array=array,
                    index=i,
                )
            )
    return "\n".join(out)


def _tables(args: Sequence[Value], results: Sequence[Value]) -> Dict[str, str]:
    """Tensor descriptions, shapes and name lookups of the source."""

    def info_rows(values: Sequence[Value], kind: str) -> str:
        rows = [
            f"    {{{cxx.string_literal(v.name)}, {cxx.string_literal(SPEC_TYPES[v.dtype])}, "
            f"{len(v.shape)}, {kind}Shape{i}, {v.size}u, {v.nbytes}u}},"
            for i, v in enumerate(values)
        ]
        return "\n".join(rows) or "    {nullptr, nullptr, 0, nullptr, 0u, 0u},"

    def c_rows(values: Sequence[Value], kind: str) -> str:
        rows = [
            f"    {{{cxx.string_literal(v.name)}, {cxx.string_literal(SPEC_TYPES[v.dtype])}, "
            f"{len(v.shape)}, {kind}Shape{i}}},"
            for i, v in enumerate(values)
        ]
        return "\n".join(rows) or "    {nullptr, nullptr, 0, nullptr},"

    def lookup(values: Sequence[Value], prefix: str) -> str:
        return "\n".join(
            f"  if (Name == {cxx.string_literal(v.name)} || "
            f"Name == {cxx.string_literal(prefix + v.name)})\n    return {i};"
            for i, v in enumerate(values)
        )

    shapes = [
        f"constexpr std::int64_t {kind}Shape{i}[] = {_shape_list(v.shape)};"
        for kind, values in (("Arg", args), ("Result", results))
        for i, v in enumerate(values)
    ]
    return dict(
        arg_info=info_rows(args, "Arg"),
        result_info=info_rows(results, "Result"),
        c_args=c_rows(args, "Arg"),
        c_results=c_rows(results, "Result"),
        lookup_args=lookup(args, "feed_"),
        lookup_results=lookup(results, "fetch_"),
        shape_decls="\n".join(shapes),
    )


def render(
    graph: Graph,
    names: Names,
    layout: Layout,
    pool: ConstantPool,
    nodes: Sequence[NodeCode],
    decls: Sequence[str],
    inline_limit: int,
) -> GeneratedModel:
    """The :class:`GeneratedModel` of ``graph``: its run function is ``nodes``
    (with the namespace-scope declarations ``decls``), its constants ``pool``,
    inline arrays when they take at most ``inline_limit`` bytes, else a
    weights file."""
    args, results = graph.args, graph.results
    header = templates.fill(
        "model.h.in",
        abi=AOT_ABI_V1,
        c_symbol=names.c_symbol,
        guard=names.guard,
        source=names.source_label,
        namespace=names.namespace,
        cls=names.class_name,
        num_args=len(args),
        num_results=len(results),
        storage=layout.storage,
        accessors=_accessors(args, results),
        arg_slots=max(len(args), 1),
        result_slots=max(len(results), 1),
    )

    weights_file, weights_decls, weights_check = None, "", ""
    if pool.nbytes <= inline_limit:
        const_decls = pool.inline_decls()
    else:
        weights_file, block = pool.weights_file(names.c_symbol)
        weights_decls = "\n" + block
        const_decls = ""
        weights_check = templates.text("weights_check.cpp.in")
    tables = _tables(args, results)
    source = templates.fill(
        "model.cpp.in",
        header_name=names.header_name,
        source=names.source_label,
        kernels=resources.files("mlbridge.aot").joinpath("kernels.h").read_text(),
        weights_decls=weights_decls,
        outline="#define MLBRIDGE_AOT_OUTLINE_KERNELS 1\n" if runfn.outline(nodes) else "",
        decls="\n\n".join(d for d in [const_decls, *decls, tables.pop("shape_decls")] if d),
        run=runfn.render(
            nodes, [CXX_TYPES[v.dtype] for v in args], [CXX_TYPES[v.dtype] for v in results]
        ),
        weights_check=weights_check,
        namespace=names.namespace,
        cls=names.class_name,
        scratch_offset=layout.scratch_offset,
        arg_offsets=", ".join(map(str, layout.arg_offsets or [0])),
        result_offsets=", ".join(map(str, layout.result_offsets or [0])),
        num_args=len(args),
        num_results=len(results),
        c_symbol=names.c_symbol,
        c_name=cxx.string_literal(names.class_name),
        metadata="".join(
            f"    {cxx.string_literal(k)}, {cxx.string_literal(v)},\n" for k, v in graph.metadata
        ),
        **tables,
    )
    return GeneratedModel(
        names.class_name, names.namespace, names.header_name, header, source, weights_file
    )


__all__ = ["GeneratedModel", "render"]

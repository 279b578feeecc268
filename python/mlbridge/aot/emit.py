"""Turns a static :class:`~mlbridge.aot.graph.Graph` into a C++17 header and
source with no dependency beyond the standard library.

Storage: every model object owns one 64-byte aligned block holding default
buffers for its arguments and results and a scratch arena for intermediate
tensors; intermediates share arena space when their lifetimes do not overlap
(greedy best fit). View operators (Reshape, Flatten, Squeeze, Unsqueeze,
Identity) emit no code. Nodes producing a result write straight into the
result buffer, which the caller may redirect (``set_result_data``), as it may
redirect the arguments (``set_arg_data``): the mlbridge runner binds both to
its own buffers so that evaluation copies nothing.

The run function is compiled twice, generic and for AVX2+FMA, and the model
picks one once, when constructed (x86-64 with GCC or Clang; elsewhere the
generic one).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Optional

import numpy as np

from mlbridge.aot import cxx
from mlbridge.aot.graph import CXX_TYPES, SPEC_TYPES, AotError, Graph, Node, Value

ALIGN = 64

#: The C ABI of generated models (version 1). include/mlbridge/AotAbi.h
#: carries the same block (the C++ and C APIs include it);
#: tests/python/test_aot.py checks that the two are identical.
AOT_ABI_V1 = """\
/* BEGIN MLBRIDGE_AOT_ABI_V1 */
#ifndef MLBRIDGE_AOT_ABI_V1
#define MLBRIDGE_AOT_ABI_V1 1
#ifdef __cplusplus
extern "C" {
#endif
/** One input or output tensor of an ahead-of-time compiled model. */
typedef struct mlbridge_aot_tensor_v1 {
  const char *name;     /**< the ONNX name */
  const char *dtype;    /**< "float" or "int64_t" (LLVM's spelling) */
  int rank;             /**< number of dimensions */
  const int64_t *shape; /**< rank dimensions */
} mlbridge_aot_tensor_v1;
/** The C interface of an ahead-of-time compiled model (mlbridge-aot). */
typedef struct mlbridge_aot_model_v1 {
  int abi_version;                       /**< 1 */
  const char *name;                      /**< the C++ class name */
  int num_args;                          /**< number of inputs */
  int num_results;                       /**< number of outputs */
  const mlbridge_aot_tensor_v1 *args;    /**< the inputs */
  const mlbridge_aot_tensor_v1 *results; /**< the outputs */
  /** A new model object with zeroed inputs, or NULL without memory. */
  void *(*create)(void);
  /** Frees a model object. */
  void (*destroy)(void *model);
  /** Buffer of input or output `index` (NULL if out of range). */
  void *(*arg_data)(void *model, int index);
  void *(*result_data)(void *model, int index);
  /** Redirects input or output `index` to `data` (NULL: own buffer). */
  void (*set_arg_data)(void *model, int index, void *data);
  void (*set_result_data)(void *model, int index, void *data);
  /** Runs the model: NULL on success, else what failed (static text). */
  const char *(*run)(void *model);
} mlbridge_aot_model_v1;
#ifdef __cplusplus
}
#endif
#endif
/* END MLBRIDGE_AOT_ABI_V1 */
"""


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class GeneratedModel:
    """The generated files of one model."""

    class_name: str
    namespace: str
    header_name: str
    header: str
    source: str


class _Arena:
    """Greedy best-fit allocation of byte ranges with known lifetimes."""

    def __init__(self) -> None:
        self.free: list = []  # (offset, size)
        self.top = 0

    def alloc(self, size: int) -> int:
        size = _align(max(size, 1))
        fits = [b for b in self.free if b[1] >= size]
        if fits:
            off, avail = min(fits, key=lambda b: b[1])
            self.free.remove((off, avail))
            if avail > size:
                self.free.append((off + size, avail - size))
            return off
        off, self.top = self.top, self.top + size
        return off

    def release(self, off: int, size: int) -> None:
        size = _align(max(size, 1))
        self.free.append((off, size))
        self.free.sort()
        merged: list = []
        for o, s in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        self.free = merged


class Emitter:
    """What operator implementations write C++ through."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.lines: list = []
        self.decls: list = []  # namespace-scope constant arrays
        self._ptr: dict = {}  # id(Value) -> C++ pointer expression
        self._scratch: Optional[str] = None
        self._counter = 0

    # -- used by operators ---------------------------------------------------
    def ptr(self, v: Value) -> str:
        """A C++ expression: pointer to the elements of ``v``."""
        if id(v) not in self._ptr:
            if v.const is None:
                raise AotError(f"internal error: tensor '{v.name}' has no storage")
            self._ptr[id(v)] = self.const(v.const, v.name)
        return self._ptr[id(v)]

    def ctype(self, v: Value) -> str:
        return CXX_TYPES[v.dtype]

    def const(self, arr: np.ndarray, hint: str) -> str:
        """Embeds ``arr`` (float32 or int64) as a constant array; its symbol."""
        arr = np.asarray(arr)
        if arr.dtype == np.int32 or arr.dtype == np.bool_:
            arr = arr.astype(np.int64)
        if arr.dtype not in CXX_TYPES:
            raise AotError(f"constant '{hint}' has element type {arr.dtype.name}, "
                           "which mlbridge-aot cannot embed (float32, int64)")
        self._counter += 1
        sym = f"kConst{self._counter}"
        self.decls.append(f"// {hint}: {arr.dtype.name} {list(arr.shape)}\n"
                          f"alignas(64) const {CXX_TYPES[arr.dtype]} {sym}"
                          f"[{max(arr.size, 1)}] = {cxx.array_body(arr)};")
        return sym

    def i64s(self, values) -> str:
        """A small constant int64 array (shapes, strides); its symbol."""
        self._counter += 1
        sym = f"kDims{self._counter}"
        items = ", ".join(cxx.int64_literal(x) for x in values) or "0"
        self.decls.append(f"constexpr kernels::I64 {sym}[] = {{{items}}};")
        return sym

    def scratch(self) -> str:
        """Pointer to this node's scratch bytes (Operator.scratch_bytes)."""
        if self._scratch is None:
            raise AotError("internal error: node asked for scratch it did not declare")
        return self._scratch

    def line(self, text: str) -> None:
        self.lines.append("  " + text)

    def fail(self, node: Node, message: str) -> str:
        """A statement making Run() fail with ``message`` about ``node``."""
        return f"return {cxx.string_literal(node.where() + ': ' + message)};"

    # -- driven by generate() ------------------------------------------------
    def bind(self, v: Value, expr: str) -> None:
        self._ptr[id(v)] = expr

    def has(self, v: Value) -> bool:
        return id(v) in self._ptr


def _plan_and_emit(graph: Graph) -> tuple:
    """Emits the body of the run function; returns (emitter, arena bytes,
    result copies)."""
    from mlbridge.aot.ops import OPERATORS

    em = Emitter(graph)
    root: dict = {}  # id(view Value) -> Value owning the bytes
    for i, v in enumerate(graph.args):
        em.bind(v, f"A{i}")
    result_of: dict = {}
    for j, v in enumerate(graph.results):
        result_of.setdefault(id(v), j)

    def owner(v: Value) -> Value:
        while id(v) in root:
            v = root[id(v)]
        return v

    # Views share their input's bytes; find owners and last uses first.
    producers = {id(o): n for n in graph.nodes for o in n.outputs}
    last_use: dict = {}
    for index, node in enumerate(graph.nodes):
        impl = OPERATORS[node.op]
        if impl.view:
            src = node.inputs[0]
            if src.const is None or id(src) in producers:
                root[id(node.outputs[0])] = src
        for v in node.inputs:
            if v is not None:
                last_use[id(owner(v))] = index
    arena = _Arena()
    offsets: dict = {}
    copies = []  # (result index, source Value)
    for index, node in enumerate(graph.nodes):
        impl = OPERATORS[node.op]
        for out in node.outputs:
            if impl.view and id(out) in root:
                continue
            if id(out) in result_of and not impl.view:
                em.bind(out, f"R{result_of[id(out)]}")
                continue
            if impl.view:  # a view of a constant: the constant itself
                em.bind(out, em.ptr(node.inputs[0]))
                continue
            off = arena.alloc(out.nbytes)
            offsets[id(out)] = (off, out.nbytes)
            em.bind(out, f"reinterpret_cast<{em.ctype(out)} *>(Scratch + {off})")
        extra = impl.scratch_bytes(node)
        extra_off = arena.alloc(extra) if extra else None
        em._scratch = f"(Scratch + {extra_off})" if extra else None
        for out in node.outputs:
            if id(out) in root:
                em.bind(out, em.ptr(owner(out)))
        em.lines.append(f"  // {node.where()}")
        if not impl.view:
            em.lines.append("  {")
            impl.emit(node, em)
            em.lines.append("  }")
        if extra:
            arena.release(extra_off, extra)
        for v in node.inputs:
            if v is None:
                continue
            o = owner(v)
            if last_use.get(id(o)) == index and id(o) in offsets:
                arena.release(*offsets.pop(id(o)))
        for out in node.outputs:  # outputs nobody reads
            if id(out) in offsets and id(owner(out)) not in last_use:
                arena.release(*offsets.pop(id(out)))
    written = set()
    for j, v in enumerate(graph.results):
        direct = (em.has(v) and em.ptr(v) == f"R{j}")
        if direct and j not in written:
            written.add(j)
            continue
        copies.append((j, v))
    for j, v in copies:
        em.lines.append(f"  // result {j} '{v.name}' is another tensor's bytes: copy")
        em.line(f"kernels::copyRows({em.ptr(v)}, 0, R{j}, 0, 1, {v.size});")
    return em, arena.top


def _shape_list(shape) -> str:
    return "{" + ", ".join(str(int(d)) for d in shape) + "}" if shape else "{0}"


def generate(graph: Graph, class_name: str, namespace: str,
             header_name: str, source_label: str = "") -> GeneratedModel:
    """Generates the header ``header_name`` and its source for ``graph``."""
    for what, text in (("class name", class_name),):
        if not cxx.is_identifier(text):
            raise AotError(f"{what} '{text}' is not a C++ identifier")
    for part in namespace.split("::"):
        if not cxx.is_identifier(part):
            raise AotError(f"namespace '{namespace}' is not a C++ namespace name")
    em, arena_bytes = _plan_and_emit(graph)

    args, results = graph.args, graph.results
    layout = []  # (kind, index, offset)
    top = 0
    for kind, values in (("arg", args), ("result", results)):
        for i, v in enumerate(values):
            layout.append((kind, i, top))
            top += _align(max(v.nbytes, 1))
    scratch_offset = top
    storage = max(top + arena_bytes, 1)

    guard = cxx.identifier(f"{namespace}_{class_name}_H").upper()
    idents = {}
    for kind, values, prefix in (("arg", args, "feed_"), ("result", results, "fetch_")):
        seen = set()
        for i, v in enumerate(values):
            ident = cxx.identifier(prefix + v.name)
            while ident in seen:
                ident += "_"
            seen.add(ident)
            idents[(kind, i)] = ident

    accessors = []
    for i, v in enumerate(args):
        accessors.append(f"  /// Buffer of input '{v.name}' ({SPEC_TYPES[v.dtype]} "
                         f"{list(v.shape)}).\n"
                         f"  {CXX_TYPES[v.dtype]} *arg_{idents[('arg', i)]}_data() {{\n"
                         f"    return static_cast<{CXX_TYPES[v.dtype]} *>(ArgData[{i}]);\n  }}")
    for i, v in enumerate(results):
        accessors.append(f"  /// Buffer of output '{v.name}' ({SPEC_TYPES[v.dtype]} "
                         f"{list(v.shape)}).\n"
                         f"  {CXX_TYPES[v.dtype]} *result_{idents[('result', i)]}_data() {{\n"
                         f"    return static_cast<{CXX_TYPES[v.dtype]} *>(ResultData[{i}]);\n  }}")

    c_symbol = cxx.identifier(f"{namespace.replace('::', '_')}_{class_name}_model")
    header = _HEADER.format(
        abi=AOT_ABI_V1, c_symbol=c_symbol,
        guard=guard, source=source_label or graph.name, namespace=namespace,
        cls=class_name, num_args=len(args), num_results=len(results),
        storage=storage,
        accessors="\n".join(accessors),
        arg_slots=max(len(args), 1), result_slots=max(len(results), 1))

    def info_rows(values, kind) -> str:
        rows = []
        for i, v in enumerate(values):
            rows.append(f"    {{{cxx.string_literal(v.name)}, {cxx.string_literal(SPEC_TYPES[v.dtype])}, "
                        f"{len(v.shape)}, {kind}Shape{i}, {v.size}u, {v.nbytes}u}},")
        return "\n".join(rows) or "    {nullptr, nullptr, 0, nullptr, 0u, 0u},"

    def c_rows(values, kind) -> str:
        rows = [f"    {{{cxx.string_literal(v.name)}, {cxx.string_literal(SPEC_TYPES[v.dtype])}, "
                f"{len(v.shape)}, {kind}Shape{i}}}," for i, v in enumerate(values)]
        return "\n".join(rows) or "    {nullptr, nullptr, 0, nullptr},"

    shape_decls = []
    for kind, values in (("Arg", args), ("Result", results)):
        for i, v in enumerate(values):
            shape_decls.append(f"constexpr std::int64_t {kind}Shape{i}[] = {_shape_list(v.shape)};")

    def lookup(values, prefix) -> str:
        rows = []
        for i, v in enumerate(values):
            rows.append(f"  if (Name == {cxx.string_literal(v.name)} || "
                        f"Name == {cxx.string_literal(prefix + v.name)})\n    return {i};")
        return "\n".join(rows)

    body_decls = []
    for i, v in enumerate(args):
        t = CXX_TYPES[v.dtype]
        body_decls.append(f"  const {t} *A{i} = static_cast<const {t} *>(Args[{i}]);")
    for i, v in enumerate(results):
        t = CXX_TYPES[v.dtype]
        body_decls.append(f"  {t} *R{i} = static_cast<{t} *>(Results[{i}]);")
    unused = ["  (void)Args;", "  (void)Results;", "  (void)Scratch;"]
    unused += [f"  (void)A{i};" for i in range(len(args))]
    unused += [f"  (void)R{i};" for i in range(len(results))]
    arg_offsets = [str(off) for kind, _, off in layout if kind == "arg"] or ["0"]
    result_offsets = [str(off) for kind, _, off in layout if kind == "result"] or ["0"]

    source = _SOURCE.format(
        header_name=header_name, source=source_label or graph.name,
        kernels=resources.files("mlbridge.aot").joinpath("kernels.h").read_text(),
        decls="\n\n".join(em.decls + shape_decls),
        arg_info=info_rows(args, "Arg"), result_info=info_rows(results, "Result"),
        body="\n".join(body_decls + unused + em.lines),
        namespace=namespace, cls=class_name, scratch_offset=scratch_offset,
        arg_offsets=", ".join(arg_offsets), result_offsets=", ".join(result_offsets),
        lookup_args=lookup(args, "feed_"), lookup_results=lookup(results, "fetch_"),
        num_args=len(args), num_results=len(results),
        c_symbol=c_symbol, c_name=cxx.string_literal(class_name),
        c_args=c_rows(args, "Arg"), c_results=c_rows(results, "Result"))
    return GeneratedModel(class_name, namespace, header_name, header, source)


_HEADER = """\
/* Generated by mlbridge-aot from {source}. Do not edit.
   Depends on the C++17 standard library only. Usable from C (the model's C
   interface) and C++ (the class). */
#ifndef {guard}
#define {guard}

#include <stddef.h>
#include <stdint.h>

{abi}
#ifdef __cplusplus
extern "C" {{
#endif
/** The C interface of {namespace}::{cls} (mlbridge.h: mlbridge_aot_runner_create). */
const mlbridge_aot_model_v1 *{c_symbol}(void);
#ifdef __cplusplus
}}

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {namespace} {{

/// An ahead-of-time compiled model. Interfaces:
///  - XLA/tfcompile style (LLVM's ReleaseModeModelRunner): LookupArgIndex,
///    LookupResultIndex (names with or without the feed_/fetch_ prefixes),
///    arg_data, result_data, Run, and arg_feed_<name>_data() accessors;
///  - EmitC style: getBufferForName, operator();
///  - mlbridge::AotModelRunner<{cls}> (mlbridge/AotModelRunner.h): the
///    mlbridge runner API, with argInfo/resultInfo describing the tensors.
/// Buffers are owned by the object unless redirected with set_arg_data /
/// set_result_data. Run() allocates nothing. Not thread-safe: one object per
/// thread.
class {cls} {{
public:
  /// Number of inputs.
  static constexpr int NumArgs = {num_args};
  /// Number of outputs.
  static constexpr int NumResults = {num_results};

  /// Describes one input or output tensor.
  struct TensorInfo {{
    /// The ONNX name.
    const char *Name;
    /// Element type, as mlbridge and LLVM spell it ("float", "int64_t").
    const char *DType;
    /// Number of dimensions.
    int Rank;
    /// Rank dimensions.
    const std::int64_t *Shape;
    /// Number of elements.
    std::size_t ElementCount;
    /// Bytes of the buffer.
    std::size_t ByteSize;
  }};
  /// Input \\p I (0 <= I < NumArgs).
  static const TensorInfo &argInfo(int I);
  /// The model's C interface (also {c_symbol}()); what
  /// mlbridge::AotModelRunner<{cls}> runs.
  static const mlbridge_aot_model_v1 *cInterface();
  /// Output \\p I (0 <= I < NumResults).
  static const TensorInfo &resultInfo(int I);

  /// Zero-filled inputs; picks the run function for this CPU.
  {cls}();
  {cls}(const {cls} &) = delete;
  {cls} &operator=(const {cls} &) = delete;

  /// Index of the input called \\p Name (or feed_\\p Name), or -1.
  static int LookupArgIndex(std::string_view Name);
  /// Index of the output called \\p Name (or fetch_\\p Name), or -1.
  static int LookupResultIndex(std::string_view Name);
  /// Buffer of input \\p I, or nullptr.
  void *arg_data(int I) {{ return I >= 0 && I < NumArgs ? ArgData[I] : nullptr; }}
  /// Buffer of output \\p I, or nullptr.
  void *result_data(int I) {{
    return I >= 0 && I < NumResults ? ResultData[I] : nullptr;
  }}
  /// Reads input \\p I from \\p Data (argInfo(I).ByteSize bytes, 4-byte
  /// aligned at least) from now on; nullptr restores the own buffer.
  void set_arg_data(int I, void *Data);
  /// Writes output \\p I to \\p Data from now on; nullptr restores the own
  /// buffer. Output buffers must not overlap each other or the inputs.
  void set_result_data(int I, void *Data);
  /// Computes the outputs. False on a data-dependent error (an index out of
  /// range, an integer division by zero), described by error().
  bool Run();
  /// Why the last Run() failed, or nullptr.
  const char *error() const {{ return LastError; }}
  /// The instruction set the run function was compiled for ("avx2+fma" or
  /// "generic"), picked for this CPU at construction.
  const char *instructionSet() const {{ return InstructionSet; }}

  /// EmitC style: the buffer of the input or output called \\p Name (with or
  /// without the feed_/fetch_ prefix), or nullptr.
  char *getBufferForName(std::string_view Name);
  /// EmitC style: runs the model (see Run()).
  void operator()() {{ Run(); }}

{accessors}

private:
  /// The run function picked for this CPU.
  using RunFunction = const char *(*)(void *const *Args, void *const *Results,
                                      unsigned char *Scratch);
  RunFunction RunImpl;
  const char *InstructionSet;
  const char *LastError = nullptr;
  void *ArgData[{arg_slots}];
  void *ResultData[{result_slots}];
  alignas(64) unsigned char Storage[{storage}];
}};

}} // namespace {namespace}

#endif /* __cplusplus */
#endif /* {guard} */
"""

_SOURCE = """\
// Generated by mlbridge-aot from {source}. Do not edit.
// Depends on the C++17 standard library only.
#include "{header_name}"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

namespace {{

{kernels}

[[maybe_unused]] constexpr float kInf = std::numeric_limits<float>::infinity();
[[maybe_unused]] constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

{decls}

/// The whole model, straight-line; instantiated once per instruction set.
MLBRIDGE_AOT_INLINE const char *runBody(void *const *Args,
                                        void *const *Results,
                                        unsigned char *Scratch) {{
{body}
  return nullptr;
}}

const char *runGeneric(void *const *Args, void *const *Results,
                       unsigned char *Scratch) {{
  return runBody(Args, Results, Scratch);
}}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&         \\
    !defined(MLBRIDGE_AOT_NO_DISPATCH)
#define MLBRIDGE_AOT_X86_DISPATCH 1
__attribute__((target("avx2,fma"))) const char *
runAvx2(void *const *Args, void *const *Results, unsigned char *Scratch) {{
  return runBody(Args, Results, Scratch);
}}
#endif

}} // namespace

namespace {namespace} {{

namespace {{
const {cls}::TensorInfo ArgInfos[] = {{
{arg_info}
}};
const {cls}::TensorInfo ResultInfos[] = {{
{result_info}
}};
constexpr std::size_t ScratchOffset = {scratch_offset};
constexpr std::size_t ArgOffsets[] = {{{arg_offsets}}};
constexpr std::size_t ResultOffsets[] = {{{result_offsets}}};
}} // namespace

const {cls}::TensorInfo &{cls}::argInfo(int I) {{ return ArgInfos[I]; }}

const {cls}::TensorInfo &{cls}::resultInfo(int I) {{ return ResultInfos[I]; }}

{cls}::{cls}() {{
  std::memset(Storage, 0, sizeof(Storage));
  for (int I = 0; I < NumArgs; ++I)
    ArgData[I] = Storage + ArgOffsets[I];
  for (int I = 0; I < NumResults; ++I)
    ResultData[I] = Storage + ResultOffsets[I];
  RunImpl = runGeneric;
  InstructionSet = "generic";
#ifdef MLBRIDGE_AOT_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {{
    RunImpl = runAvx2;
    InstructionSet = "avx2+fma";
  }}
#endif
}}

int {cls}::LookupArgIndex(std::string_view Name) {{
{lookup_args}
  (void)Name;
  return -1;
}}

int {cls}::LookupResultIndex(std::string_view Name) {{
{lookup_results}
  (void)Name;
  return -1;
}}

void {cls}::set_arg_data(int I, void *Data) {{
  if (I < 0 || I >= NumArgs)
    return;
  ArgData[I] = Data ? Data : Storage + ArgOffsets[I];
}}

void {cls}::set_result_data(int I, void *Data) {{
  if (I < 0 || I >= NumResults)
    return;
  ResultData[I] = Data ? Data : Storage + ResultOffsets[I];
}}

bool {cls}::Run() {{
  LastError = RunImpl(ArgData, ResultData, Storage + ScratchOffset);
  return LastError == nullptr;
}}

char *{cls}::getBufferForName(std::string_view Name) {{
  int I = LookupArgIndex(Name);
  if (I >= 0)
    return static_cast<char *>(ArgData[I]);
  I = LookupResultIndex(Name);
  return I >= 0 ? static_cast<char *>(ResultData[I]) : nullptr;
}}

}} // namespace {namespace}

// The C interface: plain functions over the class; no exception crosses it.
namespace {{
using CModel = {namespace}::{cls};
// Ownership passes to the C caller, who frees the object with cDestroy().
void *cCreate() {{ return new (std::nothrow) CModel(); }}
void cDestroy(void *M) {{ delete static_cast<CModel *>(M); }}
void *cArgData(void *M, int I) {{ return static_cast<CModel *>(M)->arg_data(I); }}
void *cResultData(void *M, int I) {{
  return static_cast<CModel *>(M)->result_data(I);
}}
void cSetArgData(void *M, int I, void *Data) {{
  static_cast<CModel *>(M)->set_arg_data(I, Data);
}}
void cSetResultData(void *M, int I, void *Data) {{
  static_cast<CModel *>(M)->set_result_data(I, Data);
}}
const char *cRun(void *M) {{
  CModel *P = static_cast<CModel *>(M);
  return P->Run() ? nullptr : P->error();
}}
const mlbridge_aot_tensor_v1 CArgs[] = {{
{c_args}
}};
const mlbridge_aot_tensor_v1 CResults[] = {{
{c_results}
}};
const mlbridge_aot_model_v1 CInterface = {{
    1, {c_name}, {num_args}, {num_results}, CArgs, CResults, cCreate, cDestroy,
    cArgData, cResultData, cSetArgData, cSetResultData, cRun}};
}} // namespace

extern "C" const mlbridge_aot_model_v1 *{c_symbol}(void) {{ return &CInterface; }}

const mlbridge_aot_model_v1 *{namespace}::{cls}::cInterface() {{ return &CInterface; }}

#ifdef MLBRIDGE_AOT_ENTRY_POINT
// A shared library holding one model (mlbridge_add_aot_model(... SHARED))
// exports it under a fixed name too, for dlopen().
extern "C" __attribute__((visibility("default"))) const mlbridge_aot_model_v1 *
mlbridge_aot_model_v1_entry(void) {{
  return &CInterface;
}}
#endif
"""

"""The run function of a generated model: node code grouped into steps.

The nodes' statements are cut into steps of at most :data:`STEP_NODES` nodes,
each an always-inlined function; every step is instantiated once per
instruction set (a generic wrapper and, on x86-64 with GCC or Clang, an
AVX2+FMA one), and the run function of each instruction set walks a table of
its wrappers. The C++ compiler thus never sees a function bigger than one
step, so its work grows linearly with the model (a straight-line function of
thousands of nodes takes GCC minutes).

A model of more than :data:`OUTLINE_NODES` nodes also compiles the kernels
whose sizes are run-time arguments (elementwise maps, copies, broadcasts,
reductions: ``MLBRIDGE_AOT_SHARED`` in kernels.h) as out-of-line functions
shared by every node, for the baseline instruction set, instead of inlining
a vectorised copy at every node; a step calling only those is compiled once.
"""

from __future__ import annotations

from typing import List, Sequence

#: Most nodes in one step function.
STEP_NODES = 32

#: Models with more nodes share out-of-line elementwise kernels.
OUTLINE_NODES = 256

_SIGNATURE = "void *const *Args, void *const *Results, unsigned char *Scratch"


class NodeCode:
    """The C++ statements of one node and the argument / result pointers
    (``A<i>``, ``R<j>``) they use."""

    def __init__(self, comment: str) -> None:
        self.lines: List[str] = [f"  // {comment}"]
        self.uses: set = set()  # ("A", i) / ("R", j)
        #: False when the code calls only MLBRIDGE_AOT_SHARED kernels (or none).
        self.per_isa = True

    @property
    def computes(self) -> bool:
        """Whether the node has code (views have only their comment)."""
        return len(self.lines) > 1


def _step(index: int, nodes: Sequence[NodeCode], arg_types: Sequence[str],
          result_types: Sequence[str]) -> str:
    uses = sorted(set().union(*(n.uses for n in nodes)))
    decls = []
    for kind, i in uses:
        if kind == "A":
            t = arg_types[i]
            decls.append(f"  const {t} *A{i} = static_cast<const {t} *>(Args[{i}]);")
        else:
            t = result_types[i]
            decls.append(f"  {t} *R{i} = static_cast<{t} *>(Results[{i}]);")
    unused = ["  (void)Args;", "  (void)Results;", "  (void)Scratch;"]
    unused += [f"  (void){kind}{i};" for kind, i in uses]
    body = [line for n in nodes for line in n.lines]
    return (f"/// Step {index} of the run function; instantiated once per instruction set.\n"
            f"MLBRIDGE_AOT_INLINE const char *step{index}({_SIGNATURE}) {{\n"
            + "\n".join(decls + unused + body) + "\n  return nullptr;\n}")


def _table(own: Sequence[bool], isa: str, attribute: str) -> str:
    """Wrappers of the steps for ``isa`` (where ``own``, else the generic
    ones), their table and the run function walking it."""
    wrappers = [f"{attribute}const char *step{i}{isa}({_SIGNATURE}) {{\n"
                f"  return step{i}(Args, Results, Scratch);\n}}"
                for i, mine in enumerate(own) if mine]
    entries = ",\n".join(f"    step{i}{isa if mine else 'Generic'}"
                         for i, mine in enumerate(own))
    return ("\n".join(wrappers) + "\n"
            f"constexpr StepFunction {isa}Steps[] = {{\n{entries}}};\n"
            f"{attribute}const char *run{isa}({_SIGNATURE}) {{\n"
            f"  return runSteps({isa}Steps, Args, Results, Scratch);\n}}")


def outline(nodes: Sequence[NodeCode]) -> bool:
    """Whether the model shares out-of-line kernels (it has many nodes)."""
    return sum(1 for n in nodes if n.computes) > OUTLINE_NODES


def render(nodes: Sequence[NodeCode], arg_types: Sequence[str],
           result_types: Sequence[str]) -> str:
    """The step functions and ``runGeneric`` (and ``runAvx2`` where
    ``MLBRIDGE_AOT_X86_DISPATCH`` is defined). In a model of many nodes
    (:func:`outline`), the AVX2 table reuses the generic wrapper of a step
    whose nodes call shared kernels only."""
    shared = outline(nodes)
    groups = [list(nodes[i:i + STEP_NODES]) for i in range(0, len(nodes), STEP_NODES)]
    groups = groups or [[]]
    steps = [_step(i, g, arg_types, result_types) for i, g in enumerate(groups)]
    avx2 = [not shared or any(n.per_isa for n in g) for g in groups]
    return ("\n\n".join(steps) + "\n\n"
            f"using StepFunction = const char *(*)({_SIGNATURE});\n\n"
            "/// Runs the steps in order; the first failure stops the model.\n"
            "template <std::size_t N>\n"
            "MLBRIDGE_AOT_INLINE const char *runSteps(const StepFunction (&Steps)[N],\n"
            f"                                         {_SIGNATURE}) {{\n"
            "  for (StepFunction Step : Steps)\n"
            "    if (const char *Error = Step(Args, Results, Scratch))\n"
            "      return Error;\n"
            "  return nullptr;\n}\n\n"
            + _table([True] * len(steps), "Generic", "") + "\n\n"
            "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \\\n"
            "    !defined(MLBRIDGE_AOT_NO_DISPATCH)\n"
            "#define MLBRIDGE_AOT_X86_DISPATCH 1\n"
            + _table(avx2, "Avx2", "__attribute__((target(\"avx2,fma\"))) ") + "\n"
            "#endif")

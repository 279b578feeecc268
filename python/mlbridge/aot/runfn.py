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

:func:`plan_steps` decides the steps (planning); :func:`render` writes them
through the templates ``step.cpp.in``, ``step_wrapper.cpp.in``,
``step_table.cpp.in`` and ``run.cpp.in`` (:mod:`mlbridge.aot.templates`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Set, Tuple

from mlbridge.aot import templates

#: Most nodes in one step function.
STEP_NODES = 32

#: Models with more nodes share out-of-line elementwise kernels.
OUTLINE_NODES = 256


class NodeCode:
    """The C++ statements of one node and the argument / result pointers
    (``A<i>``, ``R<j>``) they use."""

    def __init__(self, comment: str) -> None:
        self.lines: List[str] = [f"  // {comment}"]
        self.uses: Set[Tuple[str, int]] = set()  # ("A", i) / ("R", j)
        #: False when the code calls only MLBRIDGE_AOT_SHARED kernels (or none).
        self.per_isa = True

    @property
    def computes(self) -> bool:
        """Whether the node has code (views have only their comment)."""
        return len(self.lines) > 1


# -- planning: which nodes go in which step, which steps each table owns -------


@dataclass
class Step:
    """One step function: its nodes, in order, and what they use."""

    nodes: List[NodeCode]
    #: The arguments and results the nodes use, sorted (``("A", i)`` / ``("R", j)``).
    uses: List[Tuple[str, int]]
    #: Whether the AVX2 table has its own wrapper of the step (else the generic one).
    avx2: bool


def outline(nodes: Sequence[NodeCode]) -> bool:
    """Whether the model shares out-of-line kernels (it has many nodes)."""
    return sum(1 for n in nodes if n.computes) > OUTLINE_NODES


def plan_steps(nodes: Sequence[NodeCode]) -> List[Step]:
    """``nodes`` cut into steps of at most :data:`STEP_NODES` (one empty step
    for no nodes). In a model of many nodes (:func:`outline`), a step whose
    nodes call shared kernels only has no AVX2 wrapper of its own."""
    shared = outline(nodes)
    groups = [list(nodes[i : i + STEP_NODES]) for i in range(0, len(nodes), STEP_NODES)]
    return [
        Step(
            group,
            sorted(set().union(*(n.uses for n in group))),
            not shared or any(n.per_isa for n in group),
        )
        for group in groups or [[]]
    ]


# -- emission: the text of the steps and tables --------------------------------


def _step(index: int, step: Step, arg_types: Sequence[str], result_types: Sequence[str]) -> str:
    decls = []
    for kind, i in step.uses:
        if kind == "A":
            t = arg_types[i]
            decls.append(f"  const {t} *A{i} = static_cast<const {t} *>(Args[{i}]);")
        else:
            t = result_types[i]
            decls.append(f"  {t} *R{i} = static_cast<{t} *>(Results[{i}]);")
    unused = ["  (void)Args;", "  (void)Results;", "  (void)Scratch;"]
    unused += [f"  (void){kind}{i};" for kind, i in step.uses]
    body = [line for n in step.nodes for line in n.lines]
    return templates.snippet("step.cpp.in", index=index, body="\n".join(decls + unused + body))


def _table(own: Sequence[bool], isa: str, attribute: str) -> str:
    """Wrappers of the steps for ``isa`` (where ``own``, else the generic
    ones), their table and the run function walking it."""
    wrappers = [
        templates.snippet("step_wrapper.cpp.in", attribute=attribute, index=i, isa=isa)
        for i, mine in enumerate(own)
        if mine
    ]
    entries = ",\n".join(f"    step{i}{isa if mine else 'Generic'}" for i, mine in enumerate(own))
    return templates.snippet(
        "step_table.cpp.in",
        wrappers="\n".join(wrappers),
        entries=entries,
        isa=isa,
        attribute=attribute,
    )


def render(nodes: Sequence[NodeCode], arg_types: Sequence[str], result_types: Sequence[str]) -> str:
    """The step functions and ``runGeneric`` (and ``runAvx2`` where
    ``MLBRIDGE_AOT_X86_DISPATCH`` is defined), as planned by :func:`plan_steps`."""
    steps = plan_steps(nodes)
    return templates.snippet(
        "run.cpp.in",
        steps="\n\n".join(_step(i, step, arg_types, result_types) for i, step in enumerate(steps)),
        generic_table=_table([True] * len(steps), "Generic", ""),
        avx2_table=_table(
            [step.avx2 for step in steps], "Avx2", '__attribute__((target("avx2,fma"))) '
        ),
    )


__all__ = ["NodeCode", "OUTLINE_NODES", "STEP_NODES", "Step", "outline", "plan_steps", "render"]

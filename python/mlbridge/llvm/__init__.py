"""Drive stock LLVM 19's ML advisors (the decisions inlining,
regalloc-eviction and regalloc-priority) from Python policies over its interactive pipe protocol."""

from mlbridge.llvm.advisors import ADVISORS, MAX_PRIORITY, Advisor, AdvisorError, get_advisor
from mlbridge.llvm.command import compiler_kind, with_llvm_options
from mlbridge.llvm.driver import AdvisorRun, RunResult, run_compiler
from mlbridge.llvm.ir import CompileError, make_inliner_ir
from mlbridge.llvm.outcomes import call_count, section_sizes, spill_counts, text_size
from mlbridge.policies import INLINING, REGALLOC_EVICTION, REGALLOC_PRIORITY

__all__ = [
    "ADVISORS",
    "INLINING",
    "MAX_PRIORITY",
    "REGALLOC_EVICTION",
    "REGALLOC_PRIORITY",
    "Advisor",
    "AdvisorError",
    "AdvisorRun",
    "CompileError",
    "RunResult",
    "call_count",
    "compiler_kind",
    "get_advisor",
    "make_inliner_ir",
    "run_compiler",
    "section_sizes",
    "spill_counts",
    "text_size",
    "with_llvm_options",
]

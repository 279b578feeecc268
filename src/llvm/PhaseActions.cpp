//===- llvm/PhaseActions.cpp - The phase-ordering action table ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The actions a phase-ordering policy chooses from (docs/phase-ordering.md):
// single new-PM passes, each in the adaptor it needs, then sub-sequences
// of `default<Oz>` in the style of POSET-RL, then `default<Oz>`, then whole
// pipelines for a per-module choice of one. Append
// only: an action's index is its number on the wire. The same actions on
// every supported LLVM major; the pass parameters some majors lack are in
// compat/PassPipelines.h (instcombine never verifies a fixpoint, as in
// default<Oz>).
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/PhaseOrdering.h"

#include "PhasePipelines.h"
#include "compat/PassPipelines.h"

#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Error.h"

namespace mlbridge::phase {

const std::vector<Action> &actions() {
  static const std::vector<Action> Table = {
      // Scalar function passes.
      {"instcombine", "function(" MLBRIDGE_PASS_INSTCOMBINE ")"},
      {"instsimplify", "function(instsimplify)"},
      {"aggressive-instcombine", "function(aggressive-instcombine)"},
      {"simplifycfg", "function(simplifycfg)"},
      {"sroa", "function(sroa)"},
      {"mem2reg", "function(mem2reg)"},
      {"early-cse", "function(early-cse)"},
      {"early-cse<memssa>", "function(early-cse<memssa>)"},
      {"gvn", "function(gvn)"},
      {"newgvn", "function(newgvn)"},
      {"gvn-hoist", "function(gvn-hoist)"},
      {"gvn-sink", "function(gvn-sink)"},
      {"sccp", "function(sccp)"},
      {"dce", "function(dce)"},
      {"adce", "function(adce)"},
      {"bdce", "function(bdce)"},
      {"dse", "function(dse)"},
      {"reassociate", "function(reassociate)"},
      {"jump-threading", "function(jump-threading)"},
      {"correlated-propagation", "function(correlated-propagation)"},
      {"constraint-elimination", "function(constraint-elimination)"},
      {"tailcallelim", "function(tailcallelim)"},
      {"memcpyopt", "function(memcpyopt)"},
      {"mldst-motion", "function(mldst-motion)"},
      {"float2int", "function(float2int)"},
      {"div-rem-pairs", "function(div-rem-pairs)"},
      {"lower-expect", "function(lower-expect)"},
      {"mergereturn", "function(mergereturn)"},
      {"sink", "function(sink)"},
      {"speculative-execution", "function(speculative-execution)"},
      {"callsite-splitting", "function(callsite-splitting)"},
      // Loop passes (loop-simplify and LCSSA form are made by the adaptor).
      {"loop-simplify", "function(loop-simplify)"},
      {"licm", "function(loop-mssa(licm))"},
      {"loop-rotate", "function(loop(loop-rotate))"},
      {"loop-unroll", "function(loop-unroll)"},
      {"loop-unroll-full", "function(loop(loop-unroll-full))"},
      {"loop-deletion", "function(loop(loop-deletion))"},
      {"indvars", "function(loop(indvars))"},
      {"loop-idiom", "function(loop(loop-idiom))"},
      {"loop-instsimplify", "function(loop(loop-instsimplify))"},
      {"loop-simplifycfg", "function(loop(loop-simplifycfg))"},
      {"simple-loop-unswitch", "function(loop-mssa(simple-loop-unswitch))"},
      {"loop-load-elim", "function(loop-load-elim)"},
      // Interprocedural passes.
      {"ipsccp", "ipsccp"},
      {"globalopt", "globalopt"},
      {"globaldce", "globaldce"},
      {"deadargelim", "deadargelim"},
      {"constmerge", "constmerge"},
      {"mergefunc", "mergefunc"},
      {"strip-dead-prototypes", "strip-dead-prototypes"},
      {"elim-avail-extern", "elim-avail-extern"},
      {"called-value-propagation", "called-value-propagation"},
      {"inferattrs", "inferattrs"},
      {"inline", "cgscc(inline)"},
      {"function-attrs", "cgscc(function-attrs)"},
      {"argpromotion", "cgscc(argpromotion)"},
      // Sub-sequences of default<Oz> (as of LLVM 19), in its order.
      {"seq-early-simplify",
       "inferattrs,"
       "function(lower-expect,simplifycfg,sroa,early-cse)"},
      {"seq-ipo-early",
       "ipsccp,called-value-propagation,globalopt,"
       "function(mem2reg," MLBRIDGE_PASS_INSTCOMBINE ",simplifycfg)"},
      {"seq-inline",
       "cgscc(inline,function-attrs,"
       "function(sroa,early-cse<memssa>," MLBRIDGE_PASS_INSTCOMBINE ","
       "simplifycfg))"},
      {"seq-function-simplify",
       "function(sroa,early-cse<memssa>,jump-threading,"
       "correlated-propagation,simplifycfg," MLBRIDGE_PASS_INSTCOMBINE ","
       "aggressive-instcombine,tailcallelim,simplifycfg,reassociate,"
       "constraint-elimination)"},
      {"seq-loop-mssa",
       "function(loop-mssa(loop-instsimplify,loop-simplifycfg,"
       "licm<no-allowspeculation>," MLBRIDGE_PASS_LOOP_ROTATE_OZ ",licm,"
       "simple-loop-unswitch),"
       "simplifycfg," MLBRIDGE_PASS_INSTCOMBINE ")"},
      {"seq-loop",
       "function(loop(loop-idiom,indvars,loop-deletion,loop-unroll-full),"
       "sroa)"},
      {"seq-late-scalar",
       "function(mldst-motion,gvn,sccp,bdce," MLBRIDGE_PASS_INSTCOMBINE ","
       "jump-threading,correlated-propagation,adce,memcpyopt,dse,"
       "loop-mssa(licm),simplifycfg," MLBRIDGE_PASS_INSTCOMBINE ")"},
      {"seq-module-cleanup",
       "deadargelim,globalopt,globaldce,elim-avail-extern,constmerge"},
      {"seq-late", "function(float2int,lower-constant-intrinsics,"
                   "loop(" MLBRIDGE_PASS_LOOP_ROTATE_OZ ",loop-deletion),"
                   "loop-load-elim," MLBRIDGE_PASS_INSTCOMBINE ",simplifycfg,"
                   "instsimplify,div-rem-pairs,tailcallelim,simplifycfg)"},
      // The whole pipeline of clang -Oz.
      {"default<Oz>", "default<Oz>"},
      // Whole pipelines besides it, for a per-module choice of one pipeline
      // (--max-steps 1): function merging after it, it twice, clang -Oz
      // -mllvm -inline-threshold=N's, alone and with function merging, and
      // clang -Os's code (PhasePipelines.h: optsize), alone and with
      // function merging.
      {"pipeline-mergefunc", "default<Oz>,mergefunc"},
      {"pipeline-twice", "default<Oz>,default<Oz>"},
      {"pipeline-inline-threshold=0", "default<Oz;inline-threshold=0>"},
      {"pipeline-inline-threshold=10", "default<Oz;inline-threshold=10>"},
      {"pipeline-inline-threshold=25", "default<Oz;inline-threshold=25>"},
      {"pipeline-inline-threshold=0-mergefunc",
       "default<Oz;inline-threshold=0>,mergefunc"},
      {"pipeline-inline-threshold=10-mergefunc",
       "default<Oz;inline-threshold=10>,mergefunc"},
      {"pipeline-inline-threshold=25-mergefunc",
       "default<Oz;inline-threshold=25>,mergefunc"},
      {"pipeline-optsize", "optsize,default<Os>"},
      {"pipeline-optsize-mergefunc", "optsize,default<Os>,mergefunc"},
  };
  return Table;
}

size_t defaultOzAction() {
  static const size_t Index = *findAction("default<Oz>");
  return Index;
}

Expected<size_t> findAction(std::string_view Name) {
  const std::vector<Action> &Table = actions();
  for (size_t I = 0; I < Table.size(); ++I)
    if (Table[I].Name == Name)
      return I;
  return makeError(ErrorCode::InvalidArgument, "no phase-ordering action '",
                   std::string(Name), "'");
}

Error checkActions() {
  const std::vector<Action> &Table = actions();
  for (size_t I = 0; I < Table.size(); ++I) {
    llvm::ModulePassManager MPM;
    llvm::StringRef Pipeline(Table[I].Pipeline.data(),
                             Table[I].Pipeline.size());
    if (Error E = buildPipeline(Pipeline, nullptr, nullptr, MPM))
      return makeError(ErrorCode::Unsupported, "phase-ordering action #",
                       std::to_string(I), " '", std::string(Table[I].Name),
                       "': ", E.message());
  }
  return Error::success();
}

Error checkPipeline(std::string_view Text) {
  llvm::ModulePassManager MPM;
  return buildPipeline(llvm::StringRef(Text.data(), Text.size()), nullptr,
                       nullptr, MPM);
}

} // namespace mlbridge::phase

//===- gcc/LoopAnalysis.cpp - Reading a GCC loop's features ---------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

// The C++ library's headers come before GCC's, whose system.h poisons names
// they use.
#include "LoopAnalysis.h"

// GCC's headers, in the order they depend on one another.
#include "gcc-plugin.h"

#include "tree.h"

#include "function.h"

#include "basic-block.h"

#include "tree-ssa-alias.h"

#include "gimple-expr.h"

#include "gimple.h"

#include "gimple-iterator.h"

#include "cfgloop.h"

#include "tree-inline.h"

#include "tree-ssa-loop.h"

#include "tree-ssa-loop-niter.h"

namespace mlbridge {
namespace gccplugin {

namespace {

/// Iterations from a latch-count bound GCC recorded (-1 stays unknown).
int64_t iterations(HOST_WIDE_INT Latches) {
  return Latches < 0 || Latches == HOST_WIDE_INT_MAX ? -1 : Latches + 1;
}

/// Iterations of \p L when they are a constant, else -1 (a side-effect-free
/// analysis of its single exit: nothing is cached on the loop).
int64_t constantTripCount(class loop *L) {
  edge Exit = single_exit(L);
  if (!Exit)
    return -1;
  tree_niter_desc Desc;
  if (!number_of_iterations_exit(L, Exit, &Desc, /*warn=*/false) ||
      !integer_zerop(Desc.may_be_zero) || !tree_fits_shwi_p(Desc.niter))
    return -1;
  return iterations(tree_to_shwi(Desc.niter));
}

/// Whether \p S computes a floating-point value by arithmetic (not a copy).
bool isFloatArithmetic(const gimple *S) {
  if (!is_gimple_assign(S) || gimple_assign_rhs_class(S) == GIMPLE_SINGLE_RHS)
    return false;
  tree Lhs = gimple_assign_lhs(S);
  return Lhs && FLOAT_TYPE_P(TREE_TYPE(Lhs));
}

} // namespace

LoopFeatures readLoopFeatures(class loop *L) {
  LoopFeatures F;
  auto &V = F.Values;
  V[LoopDepth] = loop_depth(L);
  V[IsInnermost] = L->inner == nullptr;
  V[NumBlocks] = L->num_nodes;
  V[NumInsns] = tree_num_loop_insns(L, &eni_size_weights);
  V[NumExits] = get_loop_exit_edges(L).length();
  basic_block *Body = get_loop_body(L);
  for (unsigned I = 0; I < L->num_nodes; ++I) {
    for (gimple_stmt_iterator G = gsi_start_bb(Body[I]); !gsi_end_p(G);
         gsi_next(&G)) {
      gimple *S = gsi_stmt(G);
      if (is_gimple_debug(S))
        continue;
      ++V[NumStatements];
      V[NumCalls] += is_gimple_call(S);
      V[NumBranches] += gimple_code(S) == GIMPLE_COND;
      V[NumLoads] += gimple_assign_load_p(S);
      V[NumStores] += gimple_store_p(S);
      V[NumFloatOps] += isFloatArithmetic(S);
    }
  }
  free(Body);
  V[TripCount] = constantTripCount(L);
  V[MaxTripCount] = iterations(get_max_loop_iterations_int(L));
  V[EstimatedTrips] = iterations(get_estimated_loop_iterations_int(L));
  return F;
}

} // namespace gccplugin
} // namespace mlbridge

//===- gcc/LoopFeatures.h - What a model sees of a GCC loop -----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The features of one loop that the GCC plugin sends to a model, one int64
/// scalar tensor (shape [1]) each, in this order. They are read off GIMPLE
/// in SSA form at the start of GCC's loop pipeline, by analyses that leave
/// the function unchanged. This header does not include GCC's.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_GCC_LOOPFEATURES_H
#define MLBRIDGE_SRC_GCC_LOOPFEATURES_H

#include <array>
#include <cstddef>
#include <cstdint>

namespace mlbridge {
namespace gccplugin {

/// Index of each feature in LoopFeatures::Values.
enum LoopFeature : unsigned {
  LoopDepth,       ///< 1 for an outermost loop
  IsInnermost,     ///< 1 when no loop is nested in it
  NumBlocks,       ///< basic blocks, nested loops' included
  NumInsns,        ///< GCC's size estimate (tree_num_loop_insns)
  NumStatements,   ///< GIMPLE statements (debug ones excluded)
  NumExits,        ///< edges leaving the loop
  NumCalls,        ///< call statements
  NumLoads,        ///< statements reading memory
  NumStores,       ///< statements writing memory
  NumFloatOps,     ///< floating-point arithmetic statements
  NumBranches,     ///< conditional branches
  TripCount,       ///< iterations when a constant, else -1
  MaxTripCount,    ///< an upper bound on iterations, else -1
  EstimatedTrips,  ///< the profile's estimate of iterations, else -1
  NumLoopFeatures, ///< the number of features
};

/// The tensor names of the features, in LoopFeature order.
extern const char *const LoopFeatureNames[NumLoopFeatures];

/// The name of the model's output: an int64 scalar (shape [1]), the factor
/// `#pragma GCC unroll` would be given (docs/gcc-plugin.md).
extern const char *const UnrollFactorName;

/// The features of one loop.
struct LoopFeatures {
  /// Indexed by LoopFeature.
  std::array<int64_t, NumLoopFeatures> Values{};
};

} // namespace gccplugin
} // namespace mlbridge

#endif // MLBRIDGE_SRC_GCC_LOOPFEATURES_H

//===- mlbridge/mlir/TilingFeatures.h - A linalg nest for a model *- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The features of one linalg operation (a loop nest) that MLIR passes send
/// to a tile-size model (the mlbridge-tile pass of the MLIR plugin, or a
/// pass of one's own through TileSizeAdvisor.h), one int64 tensor each, and
/// the decision: tile sizes for the nest's first MaxTiledLoops loops (0: not
/// tiled). The heuristic's decision is a feature too (`default_tile_sizes`),
/// so that a model echoing it reproduces the pass without a model. Part of
/// the optional mlbridge_mlir library; this header does not include MLIR's.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_MLIR_TILINGFEATURES_H
#define MLBRIDGE_MLIR_TILINGFEATURES_H

#include "mlbridge/TensorSpec.h"

#include <array>
#include <cstdint>
#include <vector>

namespace mlbridge {
namespace mlirtiling {

/// The loops of a nest that a decision sizes (outer first).
constexpr unsigned MaxTiledLoops = 3;

/// The scalar features (shape [1] each), in this order.
enum TilingFeature : unsigned {
  NumLoops,       ///< loops of the nest
  NumParallel,    ///< parallel loops
  NumReduction,   ///< reduction loops
  ElementBits,    ///< bits of the first operand's element type
  NumInputs,      ///< input operands
  NumOutputs,     ///< output operands
  FootprintBytes, ///< bytes of all operands (-1 when a shape is dynamic)
  BodyOps,        ///< operations in the payload region (its yield excluded)
  IsContraction,  ///< 1 for matmul-like ops
  IsConvolution,  ///< 1 for convolutions
  IsElementwise,  ///< 1 when every loop is parallel and maps are identities
  NumScalarFeatures,
};

/// The features of one nest.
struct TilingFeatures {
  /// Indexed by TilingFeature.
  std::array<int64_t, NumScalarFeatures> Scalars{};
  /// The static ranges of the first MaxTiledLoops loops (0: no such loop,
  /// -1: dynamic), tensor `loop_ranges` [MaxTiledLoops].
  std::array<int64_t, MaxTiledLoops> LoopRanges{};
  /// The pass's own decision, tensor `default_tile_sizes` [MaxTiledLoops].
  std::array<int64_t, MaxTiledLoops> DefaultTileSizes{};
};

/// The input specs of a tiling model: the scalars, `loop_ranges`,
/// `default_tile_sizes`.
std::vector<TensorSpec> tilingFeatureSpecs();
/// The name of scalar feature \p F.
const char *scalarFeatureName(TilingFeature F);
/// The output spec: `tile_sizes`, int64 [MaxTiledLoops].
TensorSpec tileSizesSpec();

/// The heuristic (what the pass does without a model): loops of at least 64
/// iterations are tiled by 32 in nests with a reduction (contractions,
/// convolutions); elementwise and other all-parallel nests are left whole.
std::array<int64_t, MaxTiledLoops> defaultTileSizes(const TilingFeatures &F);

} // namespace mlirtiling
} // namespace mlbridge

#endif // MLBRIDGE_MLIR_TILINGFEATURES_H

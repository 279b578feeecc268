//===- mlir/TilingFeatures.cpp - What a model sees of a linalg op ---------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/mlir/TilingFeatures.h"

namespace mlbridge {
namespace mlirtiling {

namespace {
const char *const ScalarNames[NumScalarFeatures] = {
    "num_loops",      "num_parallel",   "num_reduction",   "element_bits",
    "num_inputs",     "num_outputs",    "footprint_bytes", "body_ops",
    "is_contraction", "is_convolution", "is_elementwise",
};
} // namespace

std::vector<TensorSpec> tilingFeatureSpecs() {
  std::vector<TensorSpec> Specs;
  for (const char *Name : ScalarNames)
    Specs.push_back(TensorSpec::of<int64_t>(Name, {1}));
  Specs.push_back(TensorSpec::of<int64_t>("loop_ranges", {MaxTiledLoops}));
  Specs.push_back(
      TensorSpec::of<int64_t>("default_tile_sizes", {MaxTiledLoops}));
  return Specs;
}

const char *scalarFeatureName(TilingFeature F) { return ScalarNames[F]; }

TensorSpec tileSizesSpec() {
  return TensorSpec::of<int64_t>("tile_sizes", {MaxTiledLoops});
}

std::array<int64_t, MaxTiledLoops> defaultTileSizes(const TilingFeatures &F) {
  std::array<int64_t, MaxTiledLoops> Sizes{};
  if (F.Scalars[NumReduction] == 0)
    return Sizes;
  for (unsigned L = 0; L < MaxTiledLoops; ++L)
    Sizes[L] = F.LoopRanges[L] >= 64 ? 32 : 0;
  return Sizes;
}

} // namespace mlirtiling
} // namespace mlbridge

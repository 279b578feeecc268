//===- mlir/TilingLog.cpp - The tiling pass's decisions as JSON -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "TilingLog.h"

#include "support/Json.h"

namespace mlbridge {
namespace mlirtiling {

std::string tilingLogLine(const TilingRecord &R) {
  json::ObjectLine L;
  L.string("function", R.Function)
      .string("operation", R.Operation)
      .begin("features");
  for (unsigned I = 0; I < NumScalarFeatures; ++I)
    L.integer(scalarFeatureName(TilingFeature(I)), R.Features.Scalars[I]);
  L.integers("loop_ranges", R.Features.LoopRanges.data(),
             R.Features.LoopRanges.size())
      .integers("default_tile_sizes", R.Features.DefaultTileSizes.data(),
                R.Features.DefaultTileSizes.size())
      .end()
      .integers("tile_sizes", R.TileSizes.data(), R.TileSizes.size())
      .string("source", R.Source);
  if (!R.Problem.empty())
    L.string("problem", R.Problem);
  L.number("runner_us", R.RunnerMicros);
  return L.line();
}

} // namespace mlirtiling
} // namespace mlbridge

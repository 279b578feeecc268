//===- mlir/TilingLog.cpp - The tiling pass's decisions as JSON -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "TilingLog.h"

#include "support/Json.h"

namespace mlbridge {
namespace mlirtiling {

namespace {
void appendArray(std::string &Out,
                 const std::array<int64_t, MaxTiledLoops> &A) {
  Out += '[';
  for (unsigned I = 0; I < MaxTiledLoops; ++I) {
    if (I)
      Out += ',';
    json::appendInt(Out, A[I]);
  }
  Out += ']';
}
} // namespace

std::string tilingLogLine(const TilingRecord &R) {
  std::string Out = "{\"function\":";
  json::appendString(Out, R.Function);
  Out += ",\"operation\":";
  json::appendString(Out, R.Operation);
  Out += ",\"features\":{";
  for (unsigned I = 0; I < NumScalarFeatures; ++I) {
    json::appendString(Out, scalarFeatureName(TilingFeature(I)));
    Out += ':';
    json::appendInt(Out, R.Features.Scalars[I]);
    Out += ',';
  }
  Out += "\"loop_ranges\":";
  appendArray(Out, R.Features.LoopRanges);
  Out += ",\"default_tile_sizes\":";
  appendArray(Out, R.Features.DefaultTileSizes);
  Out += "},\"tile_sizes\":";
  appendArray(Out, R.TileSizes);
  Out += ",\"source\":";
  json::appendString(Out, R.Source);
  if (!R.Problem.empty()) {
    Out += ",\"problem\":";
    json::appendString(Out, R.Problem);
  }
  Out += ",\"runner_us\":";
  json::appendDouble(Out, R.RunnerMicros);
  Out += "}\n";
  return Out;
}

} // namespace mlirtiling
} // namespace mlbridge

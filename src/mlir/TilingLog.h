//===- mlir/TilingLog.h - The tiling pass's decisions as JSON ---*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// One JSON object per line for every nest the tiling pass saw: function,
/// operation, features, tile sizes, where they came from (`model`, `default`,
/// `fallback`) and the microseconds the runner took; the pass appends them
/// to a file several compiler processes may share (AppendFile).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_MLIR_TILINGLOG_H
#define MLBRIDGE_SRC_MLIR_TILINGLOG_H

#include "mlbridge/mlir/TilingFeatures.h"

#include <string>

namespace mlbridge {
namespace mlirtiling {

/// One nest's record.
struct TilingRecord {
  std::string Function;  ///< the enclosing function's name
  std::string Operation; ///< e.g. "linalg.matmul"
  TilingFeatures Features;
  std::array<int64_t, MaxTiledLoops> TileSizes{};
  const char *Source = "default"; ///< model, default or fallback
  std::string Problem;            ///< why the model's answer was not used
  double RunnerMicros = 0;        ///< the runner's time for this nest
};

/// The JSON line of \p R (with its newline).
std::string tilingLogLine(const TilingRecord &R);

} // namespace mlirtiling
} // namespace mlbridge

#endif // MLBRIDGE_SRC_MLIR_TILINGLOG_H

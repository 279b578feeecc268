//===- mlir/LinalgAnalysis.h - Reading a linalg op's features ---*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The MLIR side of TilingFeatures: reads them off a linalg operation
/// (tensors or memrefs), without changing it.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_MLIR_LINALGANALYSIS_H
#define MLBRIDGE_SRC_MLIR_LINALGANALYSIS_H

#include "TilingFeatures.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlbridge {
namespace mlirplugin {

/// The features of \p Op, its DefaultTileSizes included.
TilingFeatures readTilingFeatures(mlir::linalg::LinalgOp Op);

} // namespace mlirplugin
} // namespace mlbridge

#endif // MLBRIDGE_SRC_MLIR_LINALGANALYSIS_H

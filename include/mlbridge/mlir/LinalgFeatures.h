//===- mlbridge/mlir/LinalgFeatures.h - A linalg op's features --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The MLIR side of TilingFeatures: reads them off a linalg operation
/// (tensors or memrefs), without changing it. Part of the optional
/// mlbridge_mlir library (built against MLIR 19).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_MLIR_LINALGFEATURES_H
#define MLBRIDGE_MLIR_LINALGFEATURES_H

#include "mlbridge/mlir/TilingFeatures.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlbridge {
namespace mlirtiling {

/// The features of \p Op, its DefaultTileSizes included.
TilingFeatures readTilingFeatures(mlir::linalg::LinalgOp Op);

} // namespace mlirtiling
} // namespace mlbridge

#endif // MLBRIDGE_MLIR_LINALGFEATURES_H

//===- mlir/LinalgFeatures.cpp - A linalg op's features -------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/mlir/LinalgFeatures.h"

#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlbridge {
namespace mlirtiling {

namespace {
/// Bits of \p T's elements (0 when they have no fixed width).
int64_t elementBits(mlir::Type T) {
  mlir::Type E = mlir::getElementTypeOrSelf(T);
  return E.isIntOrIndexOrFloat() && !E.isIndex() ? E.getIntOrFloatBitWidth()
                                                 : 0;
}
} // namespace

TilingFeatures readTilingFeatures(mlir::linalg::LinalgOp Op) {
  TilingFeatures F;
  auto &S = F.Scalars;
  S[NumLoops] = Op.getNumLoops();
  S[NumParallel] = Op.getNumParallelLoops();
  S[NumReduction] = Op.getNumReductionLoops();
  S[ElementBits] =
      Op->getNumOperands() ? elementBits(Op->getOperand(0).getType()) : 0;
  S[NumInputs] = Op.getNumDpsInputs();
  S[NumOutputs] = Op.getNumDpsInits();
  int64_t Bytes = 0;
  for (mlir::Value V : Op->getOperands()) {
    auto Shaped = mlir::dyn_cast<mlir::ShapedType>(V.getType());
    if (!Shaped)
      continue;
    if (!Shaped.hasStaticShape() || Bytes < 0) {
      Bytes = -1;
      continue;
    }
    Bytes += Shaped.getNumElements() * ((elementBits(Shaped) + 7) / 8);
  }
  S[FootprintBytes] = Bytes;
  S[BodyOps] =
      Op.getBlock() ? int64_t(Op.getBlock()->getOperations().size()) - 1 : 0;
  S[IsContraction] = mlir::linalg::isaContractionOpInterface(Op);
  // A contraction (matmul) passes the convolution test too: it is not one.
  S[IsConvolution] =
      !S[IsContraction] && mlir::linalg::isaConvolutionOpInterface(Op);
  S[IsElementwise] = mlir::linalg::isElementwise(Op);
  llvm::SmallVector<int64_t, 4> Ranges = Op.getStaticLoopRanges();
  for (unsigned L = 0; L < MaxTiledLoops && L < Ranges.size(); ++L)
    F.LoopRanges[L] = mlir::ShapedType::isDynamic(Ranges[L]) ? -1 : Ranges[L];
  F.DefaultTileSizes = defaultTileSizes(F);
  return F;
}

} // namespace mlirtiling
} // namespace mlbridge

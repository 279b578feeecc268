//===- mlir/TileSizeAdvisor.cpp - Tile sizes from a model -----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/mlir/TileSizeAdvisor.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <algorithm>
#include <chrono>

namespace mlbridge {
namespace mlirtiling {

TileSizeAdvisor::TileSizeAdvisor(std::unique_ptr<ModelRunner> Runner)
    : Runner(std::move(Runner)) {
  if (!this->Runner)
    return;
  for (unsigned I = 0; I < NumScalarFeatures; ++I)
    Scalars[I] = this->Runner->input<int64_t>(I);
  Ranges = this->Runner->input<int64_t>(NumScalarFeatures);
  Defaults = this->Runner->input<int64_t>(NumScalarFeatures + 1);
  if (!Ranges || !Defaults ||
      std::find(Scalars.begin(), Scalars.end(), nullptr) != Scalars.end())
    SpecProblem = "the runner was not made with tilingFeatureSpecs()";
}

TileDecision TileSizeAdvisor::advise(llvm::StringRef Function,
                                     const TilingFeatures &F) {
  TileDecision D;
  D.Sizes = F.DefaultTileSizes;
  if (!Runner)
    return D;
  if (!SpecProblem.empty()) {
    D.Problem = SpecProblem;
    return D;
  }
  if (Context != Function) {
    Context = Function.str();
    if (Error E = Runner->switchContext(Context)) {
      D.Problem = E.message();
      return D;
    }
  }
  for (unsigned I = 0; I < NumScalarFeatures; ++I)
    *Scalars[I] = F.Scalars[I];
  std::copy(F.LoopRanges.begin(), F.LoopRanges.end(), Ranges);
  std::copy(F.DefaultTileSizes.begin(), F.DefaultTileSizes.end(), Defaults);
  auto Start = std::chrono::steady_clock::now();
  Error E = Runner->evaluate();
  D.RunnerMicros = std::chrono::duration<double, std::micro>(
                       std::chrono::steady_clock::now() - Start)
                       .count();
  if (E) {
    D.Problem = E.message();
    return D;
  }
  auto Out = Runner->output<int64_t>(0);
  if (!Out || Out->Size != MaxTiledLoops) {
    D.Problem =
        Out ? "the runner's output is not int64 [3]" : Out.error().message();
    return D;
  }
  std::array<int64_t, MaxTiledLoops> Sizes{};
  for (unsigned L = 0; L < MaxTiledLoops; ++L) {
    Sizes[L] = (*Out)[L];
    if (Sizes[L] < 0 || Sizes[L] > MaxTileSize) {
      D.Problem = "the model answered tile size " + std::to_string(Sizes[L]) +
                  " for loop " + std::to_string(L) + ", outside [0, " +
                  std::to_string(MaxTileSize) + "]";
      return D;
    }
  }
  D.Sizes = Sizes;
  D.FromModel = true;
  return D;
}

mlir::LogicalResult
tileLinalgOp(mlir::RewriterBase &Rewriter, mlir::linalg::LinalgOp Op,
             const std::array<int64_t, MaxTiledLoops> &Sizes) {
  auto Tileable = mlir::dyn_cast<mlir::TilingInterface>(Op.getOperation());
  if (!Tileable)
    return mlir::failure();
  llvm::SmallVector<mlir::OpFoldResult> TileSizes;
  bool Any = false;
  for (unsigned L = 0; L < Op.getNumLoops(); ++L) {
    int64_t Size = L < MaxTiledLoops ? Sizes[L] : 0;
    Any = Any || Size > 0;
    TileSizes.push_back(Rewriter.getIndexAttr(Size));
  }
  if (!Any)
    return mlir::success();
  mlir::scf::SCFTilingOptions Options;
  Options.setTileSizes(TileSizes);
  Rewriter.setInsertionPoint(Op);
  auto Tiled = mlir::scf::tileUsingSCF(Rewriter, Tileable, Options);
  if (mlir::failed(Tiled))
    return mlir::failure();
  if (Op->getNumResults())
    Rewriter.replaceOp(Op, Tiled->replacements);
  else
    Rewriter.eraseOp(Op);
  return mlir::success();
}

} // namespace mlirtiling
} // namespace mlbridge

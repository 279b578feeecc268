//===- mlbridge/mlir/TileSizeAdvisor.h - Tile sizes from a model *- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The C++ API for MLIR passes whose tile sizes come from a model: a
/// TileSizeAdvisor asks any mlbridge runner (made with tilingInputSpecs() and
/// tileSizesSpec()) for the sizes of a linalg nest, checks the answer, and
/// gives the heuristic's sizes (defaultTileSizes) whenever there is no
/// runner or it fails; tileLinalgOp() applies sizes with scf.for loops. The
/// MLIR plugin's mlbridge-tile pass is these two in a loop over a module's
/// linalg operations:
///
/// \code
///   TileSizeAdvisor Advisor(std::move(Runner));   // null: the heuristic
///   for (linalg::LinalgOp Op : Nests) {
///     TileDecision D = Advisor.advise(FunctionName, readTilingFeatures(Op));
///     (void)tileLinalgOp(Rewriter, Op, D.Sizes);  // failure leaves Op whole
///   }
/// \endcode
///
/// Part of the optional mlbridge_mlir library (built against MLIR 19).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_MLIR_TILESIZEADVISOR_H
#define MLBRIDGE_MLIR_TILESIZEADVISOR_H

#include "mlbridge/ModelRunner.h"
#include "mlbridge/mlir/TilingFeatures.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <array>
#include <memory>
#include <string>

namespace mlbridge {
namespace mlirtiling {

/// The largest tile size a model may answer.
constexpr int64_t MaxTileSize = int64_t(1) << 20;

/// The tile sizes of one nest and where they came from.
struct TileDecision {
  /// Sizes of the first MaxTiledLoops loops (0: not tiled).
  std::array<int64_t, MaxTiledLoops> Sizes{};
  /// Whether they are the model's (otherwise the heuristic's).
  bool FromModel = false;
  /// Why the model's answer was not used ("" when there is no model).
  std::string Problem;
  /// The runner's time for this nest, in microseconds.
  double RunnerMicros = 0;
};

/// Asks a runner for tile sizes; the heuristic's on any failure.
class TileSizeAdvisor {
public:
  /// An advisor over \p Runner, which must have been made with
  /// tilingFeatureSpecs() and tileSizesSpec(); null: the heuristic decides.
  explicit TileSizeAdvisor(std::unique_ptr<ModelRunner> Runner);

  /// The sizes for a nest of function \p Function with features \p F (a new
  /// function starts a new runner context).
  TileDecision advise(llvm::StringRef Function, const TilingFeatures &F);

  /// Whether a runner decides (as far as it does not fail).
  bool hasModel() const { return Runner != nullptr; }

private:
  std::unique_ptr<ModelRunner> Runner;
  /// The runner's input buffers, found once (null without a runner).
  std::array<int64_t *, NumScalarFeatures> Scalars{};
  int64_t *Ranges = nullptr;
  int64_t *Defaults = nullptr;
  /// Why the runner's inputs do not fit ("" when they do).
  std::string SpecProblem;
  std::string Context;
};

/// Tiles the first MaxTiledLoops loops of \p Op by \p Sizes with scf.for
/// loops (scf::tileUsingSCF) and replaces it; all-zero sizes leave it as it
/// is. On failure \p Op is left whole. Linalg's TilingInterface is an
/// external model: the context needs linalg's
/// registerTilingInterfaceExternalModels() (mlir-opt registers it), or
/// every operation fails.
mlir::LogicalResult
tileLinalgOp(mlir::RewriterBase &Rewriter, mlir::linalg::LinalgOp Op,
             const std::array<int64_t, MaxTiledLoops> &Sizes);

} // namespace mlirtiling
} // namespace mlbridge

#endif // MLBRIDGE_MLIR_TILESIZEADVISOR_H

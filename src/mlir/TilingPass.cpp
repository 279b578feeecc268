//===- mlir/TilingPass.cpp - MLIR pass plugin: tile sizes from a model ----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// mlbridge-mlir-tiling.so, a pass plugin for stock mlir-opt-19:
///
///   mlir-opt-19 --load-pass-plugin=mlbridge-mlir-tiling.so
///     --pass-pipeline='builtin.module(mlbridge-tile{runner=onnx:tile.onnx})'
///
/// For every linalg operation that implements TilingInterface, in order, it
/// asks a runner for the tile sizes of the nest's first three loops (0: not
/// tiled) and tiles it with scf.for loops (scf::tileUsingSCF). Without a
/// runner, and for every nest where the runner fails or answers sizes out of
/// range, the pass's own heuristic decides (TilingFeatures.h): a runner that
/// echoes the `default_tile_sizes` feature gives the same IR as no runner.
/// Failures are reported as remarks; the pass itself never fails.
///
//===----------------------------------------------------------------------===//

#include "LinalgAnalysis.h"
#include "TilingFeatures.h"
#include "TilingLog.h"

#include "support/AppendFile.h"

#include "modules/RunnerModules.h"

#include "mlbridge/ModelRunner.h"
#include "mlbridge/RunnerConfig.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

namespace mlbridge {
namespace mlirplugin {
namespace {

/// The largest tile size a model may answer.
constexpr int64_t MaxTileSize = 1 << 20;

/// The tile sizes of one nest and whether they are the model's.
struct Decision {
  std::array<int64_t, MaxTiledLoops> Sizes{};
  bool FromModel = false;
  std::string Problem; // why the model's answer was not used
  double Micros = 0;   // the runner's time
};

/// Asks a runner for tile sizes; the heuristic's on any failure.
class TileAdvisor {
public:
  explicit TileAdvisor(std::string Config) : Config(std::move(Config)) {}

  /// Tile sizes for a nest of function \p Function with features \p F.
  Decision advise(llvm::StringRef Function, const TilingFeatures &F) {
    Decision D;
    D.Sizes = F.DefaultTileSizes;
    if (Config.empty() || Config == "none")
      return D;
    if (!Runner && !makeRunner()) {
      D.Problem = CreationProblem;
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
      *Runner->input<int64_t>(I) = F.Scalars[I];
    std::copy(F.LoopRanges.begin(), F.LoopRanges.end(),
              Runner->input<int64_t>(NumScalarFeatures));
    std::copy(F.DefaultTileSizes.begin(), F.DefaultTileSizes.end(),
              Runner->input<int64_t>(NumScalarFeatures + 1));
    auto Start = std::chrono::steady_clock::now();
    Error E = Runner->evaluate();
    D.Micros = std::chrono::duration<double, std::micro>(
                   std::chrono::steady_clock::now() - Start)
                   .count();
    if (E) {
      D.Problem = E.message();
      return D;
    }
    auto Out = Runner->output<int64_t>(0);
    if (!Out) {
      D.Problem = Out.error().message();
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

  /// Why the runner could not be made ("" when it was or was not tried).
  const std::string &creationProblem() const { return CreationProblem; }

private:
  bool makeRunner() {
    if (!CreationProblem.empty())
      return false;
    auto Parsed = RunnerConfig::parse(Config);
    if (!Parsed) {
      CreationProblem = Parsed.error().message();
      return false;
    }
    RunnerFactories Factories = RunnerFactories::core();
    if (Error E = addModuleRunners(Parsed->Kind, ownDirectory(), Factories)) {
      CreationProblem = E.message();
      return false;
    }
    auto Made = createRunner(*Parsed, tilingFeatureSpecs(), {tileSizesSpec()},
                             Factories);
    if (!Made) {
      CreationProblem =
          "cannot make the runner '" + Config + "': " + Made.error().message();
      return false;
    }
    Runner = std::move(*Made);
    return true;
  }

  std::string Config;
  std::unique_ptr<ModelRunner> Runner;
  std::string CreationProblem;
  std::string Context;
};

/// The pass (on the module, so that one runner serves every function).
struct TilingPass
    : public mlir::PassWrapper<TilingPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TilingPass)

  TilingPass() = default;
  TilingPass(const TilingPass &Other) : PassWrapper(Other) {}

  llvm::StringRef getArgument() const final { return "mlbridge-tile"; }
  llvm::StringRef getDescription() const final {
    return "Tile linalg operations with tile sizes from an mlbridge model "
           "(the pass's own heuristic without one or on any failure)";
  }
  void getDependentDialects(mlir::DialectRegistry &Registry) const override {
    Registry.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect,
                    mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                    mlir::tensor::TensorDialect>();
  }

  Option<std::string> RunnerOption{
      *this, "runner",
      llvm::cl::desc("a runner configuration (docs/runner-config.md); "
                     "default: $MLBRIDGE_MLIR_RUNNER, else none"),
      llvm::cl::init("")};
  Option<std::string> LogOption{
      *this, "log",
      llvm::cl::desc("append one JSON line per nest to this file; default: "
                     "$MLBRIDGE_MLIR_LOG"),
      llvm::cl::init("")};

  void runOnOperation() override {
    std::string Config = RunnerOption;
    if (Config.empty())
      if (const char *Env = std::getenv("MLBRIDGE_MLIR_RUNNER"))
        Config = Env;
    TileAdvisor Advisor(Config);
    std::string LogPath = LogOption;
    if (LogPath.empty())
      if (const char *Env = std::getenv("MLBRIDGE_MLIR_LOG"))
        LogPath = Env;
    AppendFile Log;
    std::string LogProblem;
    if (!LogPath.empty() && !Log.open(LogPath, LogProblem))
      LogProblem = "the tiling log: " + LogProblem;
    llvm::SmallVector<mlir::linalg::LinalgOp> Nests;
    getOperation().walk([&](mlir::linalg::LinalgOp Op) {
      if (mlir::isa<mlir::TilingInterface>(Op.getOperation()) &&
          Op.getNumLoops() > 0)
        Nests.push_back(Op);
    });
    unsigned Asked = 0, FellBack = 0;
    std::string FirstProblem;
    mlir::IRRewriter Rewriter(&getContext());
    for (mlir::linalg::LinalgOp Op : Nests) {
      auto Function = Op->getParentOfType<mlir::func::FuncOp>();
      const TilingFeatures F = readTilingFeatures(Op);
      Decision D = Advisor.advise(Function ? Function.getSymName() : "", F);
      ++Asked;
      if (!D.Problem.empty()) {
        ++FellBack;
        if (FirstProblem.empty())
          FirstProblem = D.Problem;
      }
      if (Log.isOpen()) {
        TilingRecord R;
        R.Function = Function ? Function.getSymName().str() : "";
        R.Operation = Op->getName().getStringRef().str();
        R.Features = F;
        R.TileSizes = D.Sizes;
        R.Source = D.FromModel         ? "model"
                   : D.Problem.empty() ? "default"
                                       : "fallback";
        R.Problem = D.Problem;
        R.RunnerMicros = D.Micros;
        if (!Log.append(tilingLogLine(R)))
          LogProblem = "cannot write the tiling log '" + LogPath + "'";
      }
      llvm::SmallVector<mlir::OpFoldResult> Sizes;
      bool Any = false;
      for (unsigned L = 0; L < Op.getNumLoops(); ++L) {
        int64_t Size = L < MaxTiledLoops ? D.Sizes[L] : 0;
        Any = Any || Size > 0;
        Sizes.push_back(Rewriter.getIndexAttr(Size));
      }
      if (!Any)
        continue;
      mlir::scf::SCFTilingOptions Options;
      Options.setTileSizes(Sizes);
      Rewriter.setInsertionPoint(Op);
      auto Tiled = mlir::scf::tileUsingSCF(
          Rewriter, mlir::cast<mlir::TilingInterface>(Op.getOperation()),
          Options);
      if (mlir::failed(Tiled)) {
        mlir::emitRemark(Op->getLoc(),
                         "mlbridge: cannot tile with these sizes; left whole");
        continue;
      }
      if (Op->getNumResults())
        Rewriter.replaceOp(Op, Tiled->replacements);
      else
        Rewriter.eraseOp(Op);
    }
    // Remarks at the module's location, without the module attached (which
    // mlir-opt would print whole).
    mlir::Location Where = getOperation().getLoc();
    if (!LogProblem.empty())
      mlir::emitRemark(Where, "mlbridge: ") << LogProblem;
    if (!Advisor.creationProblem().empty())
      mlir::emitRemark(Where, "mlbridge: ")
          << Advisor.creationProblem()
          << "; the pass's own tile sizes are used";
    else if (FellBack)
      mlir::emitRemark(Where, "mlbridge: ")
          << FellBack << " of " << Asked
          << " nests fell back to the pass's own tile sizes; the first because "
          << FirstProblem;
  }
};

} // namespace
} // namespace mlirplugin
} // namespace mlbridge

/// MLIR's entry point: registers the pass (mlbridge-tile).
extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MlbridgeTiling", MLBRIDGE_VERSION_STRING,
          []() { mlir::PassRegistration<mlbridge::mlirplugin::TilingPass>(); }};
}

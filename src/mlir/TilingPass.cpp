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
/// range, the pass's own heuristic decides (mlbridge/mlir/TilingFeatures.h):
/// a runner that echoes the `default_tile_sizes` feature gives the same IR as
/// no runner. Failures are reported as remarks; the pass itself never fails.
/// It is the public API (mlbridge/mlir/TileSizeAdvisor.h) in a loop, with
/// runner configurations, a log and remarks around it.
///
//===----------------------------------------------------------------------===//

#include "TilingLog.h"

#include "mlbridge/mlir/LinalgFeatures.h"
#include "mlbridge/mlir/TileSizeAdvisor.h"

#include "support/AppendFile.h"
#include "support/PluginDescription.h"
#include "support/PluginSettings.h"
#include "support/RunStats.h"

#include "modules/RunnerModules.h"

#include "mlbridge/ModelRunner.h"
#include "mlbridge/RunnerConfig.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace mlbridge {
namespace mlirtiling {
namespace {

/// The runner \p Config describes, made with the tiling specs (null for
/// "" and "none"); runner kinds that need large libraries come from the
/// modules beside the plugin.
Expected<std::unique_ptr<ModelRunner>> makeRunner(const std::string &Config) {
  if (Config.empty() || Config == "none")
    return std::unique_ptr<ModelRunner>();
  auto Parsed = RunnerConfig::parse(Config);
  if (!Parsed)
    return Parsed.takeError();
  RunnerFactories Factories = RunnerFactories::core();
  if (Error E = addModuleRunners(Parsed->Kind, ownDirectory(), Factories))
    return E;
  auto Made =
      createRunner(*Parsed, tilingFeatureSpecs(), {tileSizesSpec()}, Factories);
  if (!Made)
    return makeError(Made.error().code(), "cannot make the runner '", Config,
                     "': ", Made.error().message());
  return std::move(*Made);
}

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
  Option<std::string> StatsOption{
      *this, "stats",
      llvm::cl::desc("append the module's statistics record (one JSON line, "
                     "docs/run-stats.md) to this file; default: "
                     "$MLBRIDGE_MLIR_STATS"),
      llvm::cl::init("")};
  Option<std::string> DescribeOption{
      *this, "describe",
      llvm::cl::desc("write the pass's description (its options, features "
                     "and answer; docs/plugin-description.md) to this file "
                     "and tile nothing; default: $MLBRIDGE_MLIR_DESCRIBE"),
      llvm::cl::init("")};

  /// The pass's options, declared once (support/PluginSettings.h).
  static const std::vector<OptionSpec> &optionSpecs() {
    static const std::vector<OptionSpec> Specs = {
        {"runner", OptionKind::Text},
        {"log", OptionKind::Text},
        {"stats", OptionKind::Text},
        {"describe", OptionKind::Text},
    };
    return Specs;
  }

  /// The pass's contract (support/PluginDescription.h).
  static PluginDescription description() {
    return {"mlir-tiling",    "MLIR",
            "mlbridge-tile{", "=",
            optionSpecs(),    tilingFeatureSpecs(),
            {tileSizesSpec()}};
  }

  /// The pass's options: those given to the pass, else MLBRIDGE_MLIR_KEY.
  PluginSettings settings() const {
    std::vector<std::pair<std::string, std::string>> Given;
    for (const auto &[Key, Value] :
         {std::pair<const char *, std::string>{"runner", RunnerOption},
          {"log", LogOption},
          {"stats", StatsOption},
          {"describe", DescribeOption}})
      if (!Value.empty())
        Given.emplace_back(Key, Value);
    return PluginSettings::resolve("MLIR", optionSpecs(), Given,
                                   "mlbridge-tile option ");
  }

  void runOnOperation() override {
    const PluginSettings Settings = settings();
    if (Settings.Problem.empty() && Settings.has("describe")) {
      if (Error E = description().write(Settings.text("describe")))
        mlir::emitRemark(getOperation().getLoc(), "mlbridge: ") << E.message();
      return; // described: nothing is tiled
    }
    std::string Config = Settings.text("runner");
    // The runner is made at the first nest (a module without one never
    // connects to a model).
    std::optional<TileSizeAdvisor> Advisor;
    std::string CreationProblem;
    std::string LogPath = Settings.text("log");
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
    unsigned Asked = 0, FellBack = 0, Answered = 0;
    std::string FirstProblem;
    mlir::IRRewriter Rewriter(&getContext());
    for (mlir::linalg::LinalgOp Op : Nests) {
      if (!Advisor) {
        auto Runner = makeRunner(Config);
        if (!Runner)
          CreationProblem = Runner.error().message();
        Advisor.emplace(Runner ? std::move(*Runner) : nullptr);
      }
      auto Function = Op->getParentOfType<mlir::func::FuncOp>();
      const llvm::StringRef Name = Function ? Function.getSymName() : "";
      const TilingFeatures F = readTilingFeatures(Op);
      TileDecision D = Advisor->advise(Name, F);
      if (D.Problem.empty() && !CreationProblem.empty())
        D.Problem = CreationProblem;
      ++Asked;
      Answered += D.FromModel;
      if (!D.Problem.empty()) {
        ++FellBack;
        if (FirstProblem.empty())
          FirstProblem = D.Problem;
      }
      if (Log.isOpen()) {
        TilingRecord R;
        R.Function = Name.str();
        R.Operation = Op->getName().getStringRef().str();
        R.Features = F;
        R.TileSizes = D.Sizes;
        R.Source = D.FromModel         ? "model"
                   : D.Problem.empty() ? "default"
                                       : "fallback";
        R.Problem = D.Problem;
        R.RunnerMicros = D.RunnerMicros;
        if (!Log.append(tilingLogLine(R)))
          LogProblem = "cannot write the tiling log '" + LogPath + "'";
      }
      if (mlir::failed(tileLinalgOp(Rewriter, Op, D.Sizes)))
        mlir::emitRemark(Op->getLoc(),
                         "mlbridge: cannot tile with these sizes; left whole");
    }
    // Remarks at the module's location, without the module attached (which
    // mlir-opt would print whole).
    mlir::Location Where = getOperation().getLoc();
    const std::string StatsPath = Settings.text("stats");
    if (!StatsPath.empty()) {
      RunStats S;
      S.Tool = "mlir-tiling";
      if (auto File = mlir::dyn_cast<mlir::FileLineColLoc>(Where))
        S.Unit = File.getFilename().str();
      S.Runner = Config.empty() ? "none" : Config;
      S.Decisions = Asked;
      S.Answered = Answered;
      S.Fallbacks = FellBack;
      S.FirstError = FirstProblem;
      std::string Problem;
      if (!S.append(StatsPath, Problem))
        mlir::emitRemark(Where, "mlbridge: the statistics: ") << Problem;
    }
    if (!LogProblem.empty())
      mlir::emitRemark(Where, "mlbridge: ") << LogProblem;
    if (!CreationProblem.empty())
      mlir::emitRemark(Where, "mlbridge: ")
          << CreationProblem << "; the pass's own tile sizes are used";
    else if (FellBack)
      mlir::emitRemark(Where, "mlbridge: ")
          << FellBack << " of " << Asked
          << " nests fell back to the pass's own tile sizes; the first because "
          << FirstProblem;
  }
};

} // namespace
} // namespace mlirtiling
} // namespace mlbridge

/// MLIR's entry point: registers the pass (mlbridge-tile).
extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MlbridgeTiling", MLBRIDGE_VERSION_STRING,
          []() { mlir::PassRegistration<mlbridge::mlirtiling::TilingPass>(); }};
}

//===- llvm/BridgeInlineAdvisor.h - MLGO inlining served by mlbridge -*- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// BridgeInlineAdvisor: LLVM's own MLInlineAdvisor (so exactly MLGO's
/// inliner features) asking an mlbridge runner through
/// MLModelRunnerAdapter, with what LLVM's lacks: on any runner error the
/// call site gets LLVM's default advice (and the compilation goes on),
/// LLVM's decision can be sent to the model as "inlining_default" (and, to
/// in-process models, whether the callee is linkonce_odr), and the
/// decisions can be logged (training log) and counted (JSON statistics).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_BRIDGEINLINEADVISOR_H
#define MLBRIDGE_SRC_LLVM_BRIDGEINLINEADVISOR_H

#include "PluginOptions.h"
#include "compat/MLInlineAdvisor.h"

#include "mlbridge/TrainingLogWriter.h"
#include "mlbridge/llvm/MLModelRunnerAdapter.h"

#include "llvm/Analysis/InlineAdvisor.h"

#include <memory>
#include <optional>
#include <string>

namespace mlbridge {

/// The plugin's inline advisor.
class BridgeInlineAdvisor final : public compat::MLInlineAdvisor {
public:
  /// The advisor for \p M as \p O configures it; LLVM's default advisor
  /// when the runner is "none" or cannot be created (reported on stderr).
  static llvm::InlineAdvisor *
  create(llvm::Module &M, llvm::ModuleAnalysisManager &MAM,
         llvm::FunctionAnalysisManager &FAM, llvm::InlineParams Params,
         llvm::InlineContext IC, const PluginOptions &O);
  ~BridgeInlineAdvisor() override;

protected:
  /// LLVM's MLInlineAdvisor, counting the call sites it no longer asks
  /// the model about because the module outgrew the size threshold; where
  /// the model says it answers LLVM's decision (deferredSite()), that
  /// decision, without computing MLGO's features or running the model.
  std::unique_ptr<llvm::InlineAdvice>
  getAdviceImpl(llvm::CallBase &CB) override;
  std::unique_ptr<llvm::MLInlineAdvice>
  getAdviceFromModel(llvm::CallBase &CB,
                     llvm::OptimizationRemarkEmitter &ORE) override;

private:
  BridgeInlineAdvisor(llvm::Module &M, llvm::ModuleAnalysisManager &MAM,
                      std::unique_ptr<MLModelRunnerAdapter> Runner,
                      std::unique_ptr<llvm::DefaultInlineAdvisor> Default,
                      const PluginOptions &O);
  MLModelRunnerAdapter &adapter();
  /// LLVM's own decision for \p CB (what -O2/-Oz would do).
  bool llvmDecision(llvm::CallBase &CB);
  /// Whether \p CB is a call site where the model answers LLVM's decision
  /// whatever its features (DefersToOdr) and where LLVM's MLInlineAdvisor
  /// would ask the model: a direct non-recursive call, reachable, neither
  /// always- nor never-inline, before the size threshold stops the advisor.
  bool deferredSite(llvm::CallBase &CB);
  void writeStats();

  std::unique_ptr<llvm::DefaultInlineAdvisor> Default;
  const PluginOptions &Options;
  std::string ModuleName;
  /// Index of "inlining_default" among the runner's LLVM inputs.
  size_t DefaultIndex;
  /// Whether the runner reads "inlining_default".
  bool SendDefault = false;
  /// Index of "is_callee_linkonce_odr" among the adapter's inputs when the
  /// runner reads it.
  std::optional<size_t> OdrCalleeIndex;
  /// Whether the model answers LLVM's decision where the callee is
  /// linkonce_odr: it says so (metadata "mlbridge.defers_when" naming
  /// "is_callee_linkonce_odr", "mlbridge.defers_to" naming
  /// "inlining_default"), or the options do (PluginOptions::DefersWhen).
  bool DefersToOdr = false;
  std::optional<TrainingLogWriter> Log;
  std::string FirstError;
  uint64_t Decisions = 0, Inlined = 0, Fallbacks = 0, Compared = 0, Agreed = 0;
  /// Decisions of deferredSite() call sites (LLVM's, the model not run).
  uint64_t Deferred = 0;
  /// Call sites seen after the size threshold stopped the advisor.
  uint64_t AfterSizeStop = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_LLVM_BRIDGEINLINEADVISOR_H

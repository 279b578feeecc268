//===- llvm/InlineAdvisorPlugin.cpp - The pass plugin's entry point -------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Loaded into stock opt-19 (-load-pass-plugin=X.so) or clang-19
// (-fpass-plugin=X.so, plus -fplugin=X.so to accept -mllvm -mlbridge-*),
// it makes every inliner of the default, LTO and module-inline pipelines ask
// BridgeInlineAdvisor (see ../../docs/llvm-plugin.md).
//
// LLVM 19 gives a plugin advisor factory only the FunctionAnalysisManager,
// but MLInlineAdvisor needs the ModuleAnalysisManager: every MAM is recorded
// when the plugin registers its analyses (a sentinel analysis removes it when
// the MAM goes away), and the factory picks the MAM whose function proxy
// holds the FAM it was given. The plugin analysis is registered in every MAM
// (LLVM 19 consults it process-wide once one exists).
//
//===----------------------------------------------------------------------===//

#include "BridgeInlineAdvisor.h"
#include "PluginOptions.h"

#include "llvm/Analysis/InlineAdvisor.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

#include <algorithm>
#include <mutex>
#include <vector>

using namespace llvm;

namespace {

/// The module analysis managers alive in this process.
struct MamRegistry {
  std::mutex Lock;
  std::vector<ModuleAnalysisManager *> Managers;

  static MamRegistry &get() {
    static MamRegistry R;
    return R;
  }
  void add(ModuleAnalysisManager *MAM) {
    std::lock_guard<std::mutex> G(Lock);
    Managers.push_back(MAM);
  }
  void remove(ModuleAnalysisManager *MAM) {
    std::lock_guard<std::mutex> G(Lock);
    Managers.erase(std::remove(Managers.begin(), Managers.end(), MAM),
                   Managers.end());
  }
  /// The MAM whose function-analysis proxy for \p M is \p FAM.
  ModuleAnalysisManager *find(Module &M, FunctionAnalysisManager &FAM) {
    std::lock_guard<std::mutex> G(Lock);
    for (ModuleAnalysisManager *MAM : Managers)
      if (auto *Proxy =
              MAM->getCachedResult<FunctionAnalysisManagerModuleProxy>(M))
        if (&Proxy->getManager() == &FAM)
          return MAM;
    return nullptr;
  }
};

/// An analysis that only tracks its MAM's lifetime: it lives in the MAM's
/// pass registry and unregisters the MAM when destroyed.
class MamSentinel : public AnalysisInfoMixin<MamSentinel> {
public:
  static AnalysisKey Key;
  struct Result {};
  explicit MamSentinel(ModuleAnalysisManager *MAM) : MAM(MAM) {
    MamRegistry::get().add(MAM);
  }
  MamSentinel(MamSentinel &&Other) : MAM(Other.MAM) { Other.MAM = nullptr; }
  MamSentinel(const MamSentinel &) = delete;
  ~MamSentinel() {
    if (MAM)
      MamRegistry::get().remove(MAM);
  }
  Result run(Module &, ModuleAnalysisManager &) { return {}; }

private:
  ModuleAnalysisManager *MAM;
};
AnalysisKey MamSentinel::Key;

InlineAdvisor *advisorFactory(Module &M, FunctionAnalysisManager &FAM,
                              InlineParams Params, InlineContext IC) {
  const mlbridge::PluginOptions &O = mlbridge::pluginOptions();
  ModuleAnalysisManager *MAM = MamRegistry::get().find(M, FAM);
  if (!MAM) {
    if (O.Runner != "none")
      errs() << "mlbridge inline advisor: no module analysis manager for '"
             << M.getModuleIdentifier() << "'; using LLVM's default advice\n";
    return new DefaultInlineAdvisor(M, FAM, Params, IC);
  }
  return mlbridge::BridgeInlineAdvisor::create(M, *MAM, FAM, Params, IC, O);
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {
      LLVM_PLUGIN_API_VERSION, "mlbridge-inline-advisor",
      MLBRIDGE_VERSION_STRING, [](PassBuilder &PB) {
        PB.registerAnalysisRegistrationCallback([](ModuleAnalysisManager &MAM) {
          MAM.registerPass([&MAM] { return MamSentinel(&MAM); });
          MAM.registerPass(
              [] { return PluginInlineAdvisorAnalysis(advisorFactory); });
        });
      }};
}

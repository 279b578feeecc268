//===- llvm/BridgeInlineAdvisor.cpp - MLGO inlining served by mlbridge ----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "BridgeInlineAdvisor.h"
#include "InlineRunners.h"
#include "support/PluginDescription.h"
#include "support/RunStats.h"

#include "llvm/Analysis/InlineModelFeatureMaps.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace llvm;

namespace mlbridge {
namespace {

/// LLVM's inliner features followed by "inlining_default" (what the
/// training log records).
std::vector<llvm::TensorSpec> llvmInputs() {
  std::vector<llvm::TensorSpec> Specs(FeatureMap.begin(), FeatureMap.end());
  Specs.push_back(
      llvm::TensorSpec::createSpec<int64_t>(DefaultDecisionFeature, {1}));
  return Specs;
}

/// Whether a runner of \p Kind runs in this process (a model file or no
/// model), and so may be offered the plugin's own extra inputs.
bool inProcess(RunnerKind Kind) {
  return Kind != RunnerKind::Pipe && Kind != RunnerKind::Grpc;
}

/// The inputs offered to a runner of \p Kind: llvmInputs(), then for an
/// in-process runner "is_callee_linkonce_odr".
std::vector<llvm::TensorSpec> runnerInputs(RunnerKind Kind) {
  std::vector<llvm::TensorSpec> Specs = llvmInputs();
  if (inProcess(Kind))
    Specs.push_back(
        llvm::TensorSpec::createSpec<int64_t>(OdrCalleeFeature, {1}));
  return Specs;
}

/// Whether \p CB calls a linkonce_odr function directly.
bool callsLinkOnceODR(const CallBase &CB) {
  const Function *Callee = CB.getCalledFunction();
  return Callee && Callee->hasLinkOnceODRLinkage();
}

/// What LLVM's default advisor decides for \p CB, without it recording
/// anything (the call site is not inlined on its advice).
bool defaultDecision(DefaultInlineAdvisor &Default, CallBase &CB) {
  auto Advice = Default.getAdvice(CB);
  bool Inline = Advice->isInliningRecommended();
  Advice->recordUnattemptedInlining();
  return Inline;
}

/// Reports a problem of the plugin on stderr (never stdout: the compiler
/// may be writing its output there).
void report(const std::string &Message) {
  errs() << "mlbridge inline advisor: " << Message << "\n";
}

/// LLVM's -ml-advisor-size-increase-threshold (a float cl::opt of
/// MLInlineAdvisor.cpp), or null if this LLVM has none.
cl::opt<float> *sizeThresholdOption() {
  auto &Registered = cl::getRegisteredOptions();
  auto It = Registered.find("ml-advisor-size-increase-threshold");
  return It == Registered.end() ? nullptr
                                : dynamic_cast<cl::opt<float> *>(It->second);
}

/// Sets LLVM's size threshold to \p Wanted unless the user gave LLVM's
/// option explicitly (theirs wins).
void applySizeThreshold(std::optional<double> Wanted) {
  cl::opt<float> *Opt = sizeThresholdOption();
  if (!Wanted || !Opt || Opt->getNumOccurrences())
    return;
  // Infinity: CurrentIRSize > inf * InitialIRSize never holds.
  Opt->setValue(std::isinf(*Wanted) ? HUGE_VALF : float(*Wanted));
}

/// The threshold in force as JSON: a number, or null for no cap.
std::string sizeThresholdJson() {
  cl::opt<float> *Opt = sizeThresholdOption();
  if (!Opt)
    return "null";
  float V = Opt->getValue();
  if (std::isinf(V))
    return "null";
  char Buf[32];
  std::snprintf(Buf, sizeof(Buf), "%g", double(V));
  return Buf;
}

/// The plugin's contract (support/PluginDescription.h): every input a model
/// may read (a runner in another process, pipes or gRPC, is not offered
/// the last, is_callee_linkonce_odr) and the decision.
Expected<PluginDescription> description() {
  std::vector<TensorSpec> Features;
  for (const llvm::TensorSpec &S : runnerInputs(RunnerKind::Onnx)) {
    auto Spec = fromLLVM(S);
    if (!Spec)
      return Spec.takeError();
    Features.push_back(std::move(*Spec));
  }
  return PluginDescription{"inline-advisor",
                           "INLINE",
                           "-mlbridge-",
                           "=",
                           inlineOptionSpecs(),
                           std::move(Features),
                           {TensorSpec::of<int64_t>(DecisionName, {1})}};
}

/// Writes the description to \p Path; a problem is reported.
void describe(const std::string &Path) {
  auto D = description();
  Error E = D ? D->write(Path) : D.takeError();
  if (E)
    report(E.message());
}

} // namespace

InlineAdvisor *
BridgeInlineAdvisor::create(Module &M, ModuleAnalysisManager &MAM,
                            FunctionAnalysisManager &FAM, InlineParams Params,
                            InlineContext IC, const PluginOptions &O) {
  auto Default = std::make_unique<DefaultInlineAdvisor>(M, FAM, Params, IC);
  if (O.Problem.empty() && !O.DescribePath.empty()) {
    describe(O.DescribePath);
    return Default.release(); // described: LLVM decides every call site
  }
  if (O.Runner == "none")
    return Default.release();
  if (!O.Problem.empty()) {
    report(O.Problem + "; using LLVM's default advice");
    return Default.release();
  }
  applySizeThreshold(O.SizeIncreaseThreshold);
  std::vector<llvm::TensorSpec> LLVMInputs = runnerInputs(O.Config.Kind);
  std::vector<TensorSpec> Inputs;
  for (const llvm::TensorSpec &S : LLVMInputs) {
    auto Spec = fromLLVM(S);
    if (!Spec) {
      report(Spec.error().toString());
      return Default.release();
    }
    Inputs.push_back(std::move(*Spec));
  }
  auto Runner = makeInlineRunner(O, std::move(Inputs),
                                 TensorSpec::of<int64_t>(DecisionName, {1}));
  if (!Runner) {
    report("cannot create the " + O.Runner + " runner (" +
           Runner.error().toString() + "); using LLVM's default advice");
    return Default.release();
  }
  auto Adapter = MLModelRunnerAdapter::create(M.getContext(),
                                              std::move(*Runner), LLVMInputs);
  if (!Adapter) {
    report(Adapter.error().toString() + "; using LLVM's default advice");
    return Default.release();
  }
  // Ownership passes to LLVM's InlineAdvisorAnalysis, which deletes it.
  return new BridgeInlineAdvisor(M, MAM, std::move(*Adapter),
                                 std::move(Default), O);
}

BridgeInlineAdvisor::BridgeInlineAdvisor(
    Module &M, ModuleAnalysisManager &MAM,
    std::unique_ptr<MLModelRunnerAdapter> Runner,
    std::unique_ptr<DefaultInlineAdvisor> DefaultAdvisor,
    const PluginOptions &O)
    : compat::MLInlineAdvisor(M, MAM, std::move(Runner),
                              [D = DefaultAdvisor.get()](CallBase &CB) {
                                return defaultDecision(*D, CB);
                              }),
      Default(std::move(DefaultAdvisor)), Options(O),
      ModuleName(M.getModuleIdentifier()), DefaultIndex(FeatureMap.size()) {
  MLModelRunnerAdapter &A = adapter();
  // LLVM's own decision is computed only for a model that reads it.
  auto Index = A.runner().inputIndex(DefaultDecisionFeature);
  SendDefault = Index && A.runner().readsInput(*Index);
  auto OdrIndex = A.runner().inputIndex(OdrCalleeFeature);
  if (OdrIndex && A.runner().readsInput(*OdrIndex))
    OdrCalleeIndex = *OdrIndex;
  // Told so (-mlbridge-defers-when: a remote model cannot say it), or said
  // by the model, which then reads the flag.
  DefersToOdr = O.DefersWhen == OdrCalleeFeature ||
                (OdrCalleeIndex &&
                 A.runner().metadata(DefersWhenKey) == OdrCalleeFeature &&
                 A.runner().metadata(DefersToKey) == DefaultDecisionFeature);
  if (!O.LogPath.empty()) {
    std::vector<TensorSpec> Logged;
    for (const llvm::TensorSpec &S : llvmInputs())
      Logged.push_back(*fromLLVM(S));
    TensorSpec Decision = TensorSpec::of<int64_t>(DecisionName, {1});
    Logged.push_back(Decision);
    auto W = TrainingLogWriter::create(O.LogPath, std::move(Logged),
                                       std::nullopt, Decision);
    if (W) {
      Log.emplace(std::move(*W));
      if (Error E = Log->switchContext(ModuleName))
        report(E.toString());
    } else {
      report(W.error().toString());
    }
  }
}

BridgeInlineAdvisor::~BridgeInlineAdvisor() {
  if (Log)
    if (Error E = Log->flush())
      report(E.toString());
  writeStats();
}

MLModelRunnerAdapter &BridgeInlineAdvisor::adapter() {
  return *static_cast<MLModelRunnerAdapter *>(ModelRunner.get());
}

bool BridgeInlineAdvisor::llvmDecision(CallBase &CB) {
  return defaultDecision(*Default, CB);
}

bool BridgeInlineAdvisor::deferredSite(CallBase &CB) {
  // A training log records every call site's features: none is skipped.
  if (!DefersToOdr || Log || isForcedToStop() || !callsLinkOnceODR(CB) ||
      CB.getCaller() == CB.getCalledFunction())
    return false;
  Function &Caller = *CB.getCaller();
  if (!FAM.getResult<DominatorTreeAnalysis>(Caller).isReachableFromEntry(
          CB.getParent()))
    return false;
  auto &ORE = FAM.getResult<OptimizationRemarkEmitterAnalysis>(Caller);
  return getMandatoryKind(CB, FAM, ORE) == MandatoryInliningKind::NotMandatory;
}

std::unique_ptr<InlineAdvice> BridgeInlineAdvisor::getAdviceImpl(CallBase &CB) {
  AfterSizeStop += isForcedToStop();
  if (!deferredSite(CB))
    return MLInlineAdvisor::getAdviceImpl(CB);
  // The model's answer, had it been asked: LLVM's decision. An MLInlineAdvice
  // keeps MLInlineAdvisor's module size and call-graph counts exact.
  bool Decision = llvmDecision(CB);
  ++Decisions;
  ++Deferred;
  Inlined += Decision;
  ++Compared;
  ++Agreed;
  auto &ORE = FAM.getResult<OptimizationRemarkEmitterAnalysis>(*CB.getCaller());
  return std::make_unique<MLInlineAdvice>(this, CB, ORE, Decision);
}

std::unique_ptr<MLInlineAdvice>
BridgeInlineAdvisor::getAdviceFromModel(CallBase &CB,
                                        OptimizationRemarkEmitter &ORE) {
  MLModelRunnerAdapter &A = adapter();
  std::optional<bool> LLVMDecision;
  if (SendDefault || Options.CompareDefault || Log)
    LLVMDecision = llvmDecision(CB);
  *A.getTensor<int64_t>(DefaultIndex) = LLVMDecision.value_or(false);
  if (OdrCalleeIndex)
    *A.getTensor<int64_t>(*OdrCalleeIndex) = callsLinkOnceODR(CB);
  bool Decision;
  if (Error E = A.evaluateChecked()) {
    // The compiler goes on with its own heuristic for this call site.
    if (!Fallbacks++) {
      FirstError = E.toString();
      report(FirstError + "; using LLVM's default advice");
    }
    if (!LLVMDecision)
      LLVMDecision = llvmDecision(CB);
    Decision = *LLVMDecision;
  } else {
    Decision = *static_cast<const int64_t *>(A.runner().outputData(0)) != 0;
  }
  ++Decisions;
  Inlined += Decision;
  if (LLVMDecision) {
    ++Compared;
    Agreed += Decision == *LLVMDecision;
  }
  if (Log) {
    std::vector<const void *> Data;
    for (size_t I = 0; I <= DefaultIndex; ++I)
      Data.push_back(A.getTensorUntyped(I));
    int64_t Logged = Decision;
    Data.push_back(&Logged);
    if (Error E = Log->logObservation(Data.data())) {
      report(E.toString());
      Log.reset();
    }
  }
  return std::make_unique<MLInlineAdvice>(this, CB, ORE, Decision);
}

void BridgeInlineAdvisor::writeStats() {
  if (Options.StatsPath.empty())
    return;
  RunStats S;
  S.Tool = "inline-advisor";
  S.Unit = ModuleName;
  S.Runner = Options.Runner;
  S.Decisions = Decisions;
  S.Answered = Decisions - Deferred - Fallbacks;
  S.Fallbacks = Fallbacks;
  S.FirstError = FirstError;
  S.detail("inlined", Inlined)
      .detail("compared", Compared)
      .detail("agreed", Agreed)
      .detail("deferred", Deferred)
      .detailRaw("size_increase_threshold", sizeThresholdJson())
      .detailBool("size_stopped", isForcedToStop())
      .detail("after_size_stop", AfterSizeStop);
  std::string Problem;
  if (!S.append(Options.StatsPath, Problem))
    report("statistics: " + Problem);
}

} // namespace mlbridge

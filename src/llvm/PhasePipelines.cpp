//===- llvm/PhasePipelines.cpp - Pipelines as clang builds them -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// LLVM's parser of "default<Oz>" turns SLP vectorization off, as opt does;
// clang -Oz runs it (its driver passes -vectorize-slp at -Oz). So each
// default<L> element gets a PassBuilder of its own with clang's tuning at L.
// Its inline threshold is LLVM's -inline-threshold option, set while the
// element's pipeline is built (the inliner reads it then) and reset after:
// what clang -mllvm -inline-threshold=N builds, which a minsize caller does
// not clamp to -Oz's threshold as PipelineTuningOptions::InlinerThreshold
// would.
//
// clang's front end gives the same IR at -Os and -Oz but for the minsize
// attribute -Oz adds to every function; the optsize element takes it away,
// so "optsize,default<Os>" on a module of clang -Oz's front end is
// clang -Os's code, chosen after the front end has run.
//
//===----------------------------------------------------------------------===//

#include "PhasePipelines.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>
#include <vector>

namespace mlbridge::phase {
namespace {

/// The top-level elements of a textual pipeline ("a,f(b,c),d" has three).
std::vector<llvm::StringRef> topLevelElements(llvm::StringRef Text) {
  std::vector<llvm::StringRef> Elements;
  int Depth = 0;
  size_t Start = 0;
  for (size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    if (C == '(' || C == '<')
      ++Depth;
    else if (C == ')' || C == '>')
      --Depth;
    else if (C == ',' && Depth == 0) {
      Elements.push_back(Text.slice(Start, I).trim());
      Start = I + 1;
    }
  }
  Elements.push_back(Text.substr(Start).trim());
  return Elements;
}

/// clang's tuning at \p Level: -vectorize-loops at -O2, -O3 and -Os,
/// -vectorize-slp at those and -Oz.
llvm::PipelineTuningOptions clangTuning(llvm::OptimizationLevel Level) {
  llvm::PipelineTuningOptions PTO;
  PTO.SLPVectorization =
      Level.getSpeedupLevel() > 1 || Level == llvm::OptimizationLevel::Oz;
  PTO.LoopVectorization =
      Level.getSpeedupLevel() > 1 && Level != llvm::OptimizationLevel::Oz;
  return PTO;
}

/// The optsize element: minsize taken off every function (declarations
/// too), which keep (or get) optsize: the functions of clang -Os's front
/// end. (A function the source marks minsize loses it too.)
struct OptSizePass : llvm::PassInfoMixin<OptSizePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &) {
    bool Changed = false;
    for (llvm::Function &F : M) {
      if (!F.hasMinSize())
        continue;
      F.removeFnAttr(llvm::Attribute::MinSize);
      F.addFnAttr(llvm::Attribute::OptimizeForSize);
      Changed = true;
    }
    return Changed ? llvm::PreservedAnalyses::none()
                   : llvm::PreservedAnalyses::all();
  }
};

/// A default<L[;inline-threshold=N]> element.
struct DefaultElement {
  llvm::OptimizationLevel Level;
  std::optional<int> InlineThreshold;
};

/// \p Element as a default element: nullopt when it is not one ("default<"
/// ... ">"), an error when it is one that is malformed.
Expected<std::optional<DefaultElement>>
defaultElement(llvm::StringRef Element) {
  llvm::StringRef Inner = Element;
  if (!Inner.consume_front("default<") || !Inner.consume_back(">"))
    return std::optional<DefaultElement>();
  auto [LevelText, Params] = Inner.split(';');
  std::optional<llvm::OptimizationLevel> Level =
      llvm::StringSwitch<std::optional<llvm::OptimizationLevel>>(LevelText)
          .Case("O1", llvm::OptimizationLevel::O1)
          .Case("O2", llvm::OptimizationLevel::O2)
          .Case("O3", llvm::OptimizationLevel::O3)
          .Case("Os", llvm::OptimizationLevel::Os)
          .Case("Oz", llvm::OptimizationLevel::Oz)
          .Default(std::nullopt);
  if (!Level)
    return makeError(ErrorCode::InvalidArgument, "'", Element.str(),
                     "': the level is O1, O2, O3, Os or Oz");
  DefaultElement Out{*Level, std::nullopt};
  while (!Params.empty()) {
    auto [Param, Rest] = Params.split(';');
    Params = Rest;
    int Value = 0;
    if (!Param.consume_front("inline-threshold=") ||
        Param.getAsInteger(10, Value) || Value < MinInlineThreshold ||
        Value > MaxInlineThreshold || Out.InlineThreshold)
      return makeError(ErrorCode::InvalidArgument, "'", Element.str(),
                       "': the one parameter is inline-threshold=N, N from ",
                       std::to_string(MinInlineThreshold), " to ",
                       std::to_string(MaxInlineThreshold));
    Out.InlineThreshold = Value;
  }
  return std::optional<DefaultElement>(Out);
}

/// LLVM's -inline-threshold set to a value for this object's life, as if
/// given on the command line, then back to its state before.
class ScopedInlineThreshold {
public:
  explicit ScopedInlineThreshold(std::optional<int> Value) {
    if (!Value)
      return;
    auto &Registered = llvm::cl::getRegisteredOptions();
    auto It = Registered.find("inline-threshold");
    Opt = It == Registered.end()
              ? nullptr
              : dynamic_cast<llvm::cl::opt<int> *>(It->second);
    if (!Opt)
      return;
    Before = Opt->getValue();
    Occurrences = Opt->getNumOccurrences();
    Opt->addOccurrence(0, "inline-threshold", std::to_string(*Value));
  }
  ~ScopedInlineThreshold() {
    if (!Opt)
      return;
    Opt->reset();
    if (Occurrences)
      Opt->addOccurrence(0, "inline-threshold", std::to_string(Before));
  }
  ScopedInlineThreshold(const ScopedInlineThreshold &) = delete;
  ScopedInlineThreshold &operator=(const ScopedInlineThreshold &) = delete;

private:
  llvm::cl::opt<int> *Opt = nullptr;
  int Before = 0;
  unsigned Occurrences = 0;
};

} // namespace

Error buildPipeline(llvm::StringRef Text, llvm::TargetMachine *TM,
                    llvm::PassInstrumentationCallbacks *PIC,
                    llvm::ModulePassManager &MPM) {
  llvm::PassBuilder PB(TM, clangTuning(llvm::OptimizationLevel::Oz),
                       std::nullopt, PIC);
  for (llvm::StringRef Element : topLevelElements(Text)) {
    Expected<std::optional<DefaultElement>> Default = defaultElement(Element);
    if (!Default)
      return makeError(ErrorCode::InvalidArgument, "pipeline '", Text.str(),
                       "' does not parse: ", Default.error().message());
    if (*Default) {
      // A builder of its own: its tuning is the level's.
      const DefaultElement &D = **Default;
      llvm::PassBuilder Builder(TM, clangTuning(D.Level), std::nullopt, PIC);
      ScopedInlineThreshold Threshold(D.InlineThreshold);
      MPM.addPass(Builder.buildPerModuleDefaultPipeline(D.Level));
    } else if (Element == OptSizeElement) {
      MPM.addPass(OptSizePass());
    } else if (llvm::Error E = PB.parsePassPipeline(MPM, Element)) {
      return makeError(ErrorCode::InvalidArgument, "pipeline '", Text.str(),
                       "' does not parse: ", llvm::toString(std::move(E)));
    }
  }
  return Error::success();
}

} // namespace mlbridge::phase

//===- common/PhaseDeployment.cpp - A module optimised for a build --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PhaseDeployment.h"

#include "mlbridge/llvm/PhaseProtocol.h"
#include "support/RunStats.h"
#ifdef MLBRIDGE_RUNNER_MODULES_FROM
#include "modules/RunnerModules.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#else
#ifdef MLBRIDGE_HAVE_GRPC
#include "mlbridge/GrpcModelRunner.h"
#endif
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
#include "mlbridge/OnnxModelRunner.h"
#endif
#endif

#include <cstdio>
#include <memory>

namespace mlbridge::tools {

#ifdef MLBRIDGE_RUNNER_MODULES_FROM
/// Where the module of \p Kind is: beside this program (a build tree), else
/// MLBRIDGE_RUNNER_MODULES_FROM from it (an installation).
static std::string moduleDirectory(RunnerKind Kind) {
  static int Anchor;
  std::string Program = llvm::sys::fs::getMainExecutable(nullptr, &Anchor);
  llvm::StringRef Here = llvm::sys::path::parent_path(Program);
  const char *File = runnerModuleFile(Kind);
  if (File && llvm::sys::fs::exists(Here + "/" + File))
    return Here.str();
  return (Here + "/" + MLBRIDGE_RUNNER_MODULES_FROM).str();
}
#endif

Expected<RunnerFactories> runnerFactories(RunnerKind Kind) {
  RunnerFactories F = RunnerFactories::core();
#ifdef MLBRIDGE_RUNNER_MODULES_FROM
  if (Error E = addModuleRunners(Kind, moduleDirectory(Kind), F))
    return E;
#else
  (void)Kind;
#ifdef MLBRIDGE_HAVE_GRPC
  addGrpcRunners(F);
#endif
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
  addOnnxRunners(F);
#endif
#endif
  return F;
}

namespace {

/// A constant pipeline; one that breaks the module (rolled back by the
/// session) leaves it to default<Oz>, as a runner's failure does.
Error runConstant(const std::string &Pipeline, phase::Session &S,
                  const char *Tool) {
  Error E = S.applyPipeline(Pipeline);
  if (!E)
    return E;
  if (E.code() == ErrorCode::InvalidArgument)
    return E;
  std::fprintf(stderr, "%s: %s; falling back to default<Oz>\n", Tool,
               E.message().c_str());
  if (Error Reset = S.reset())
    return Reset;
  return S.apply(phase::defaultOzAction());
}

Error runModel(const DeploymentPlan &Plan, phase::Session &S,
               const char *Tool) {
  const RunnerConfig &Config = *Plan.Runner;
  std::unique_ptr<ModelRunner> Model;
  Error CreateError;
  if (Expected<RunnerFactories> Factories = runnerFactories(Config.Kind)) {
    auto Runner = createRunner(Config, phase::observationSpecs(),
                               phase::actionSpecs(), *Factories);
    if (Runner)
      Model = std::move(*Runner);
    else
      CreateError = Runner.takeError();
  } else {
    CreateError = Factories.takeError();
  }
  phase::DeploymentResult R =
      phase::chooseSequence(Model.get(), S, Plan.MaxSteps);
  // The runner's error that made the module fall back ("" when it chose
  // to the end): its creation's, else the one chooseSequence() met.
  std::string Fallback;
  if (R.RunnerError) {
    Fallback = (CreateError ? CreateError : R.RunnerError).toString();
    std::fprintf(stderr,
                 "%s: runner %s: %s; falling back to default<Oz> after %lld "
                 "chosen actions\n",
                 Tool, Config.str().c_str(), Fallback.c_str(),
                 static_cast<long long>(R.Steps));
  }
  if (R.FailedSteps)
    std::fprintf(stderr,
                 "%s: %lld actions broke the module and were undone "
                 "(last: %s)\n",
                 Tool, static_cast<long long>(R.FailedSteps),
                 R.LastFailure.message().c_str());
  if (Plan.Stats.empty())
    return Error::success();
  // Each step is a decision; a runner that failed made one more, the
  // fallback to default<Oz> for the rest of the sequence.
  RunStats Stats;
  Stats.Tool = "phase-service";
  Stats.Unit = S.moduleName();
  Stats.Runner = Config.str();
  Stats.Answered = static_cast<uint64_t>(R.Steps);
  Stats.Fallbacks = R.RunnerError ? 1 : 0;
  Stats.Decisions = Stats.Answered + Stats.Fallbacks;
  Stats.FirstError = Fallback;
  Stats.detail("failed_steps", R.FailedSteps);
  std::string Problem;
  if (!Stats.append(Plan.Stats, Problem))
    return makeError(ErrorCode::IO, "--stats: ", Problem);
  return Error::success();
}

} // namespace

Error optimiseLoaded(const DeploymentPlan &Plan, phase::Session &S,
                     const char *Tool) {
  if (!Plan.Runner)
    return runConstant(Plan.Pipeline, S, Tool);
  return runModel(Plan, S, Tool);
}

} // namespace mlbridge::tools

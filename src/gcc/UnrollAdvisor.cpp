//===- gcc/UnrollAdvisor.cpp - Unroll factors asked of a model ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "UnrollAdvisor.h"

#include <utility>

namespace mlbridge {
namespace gccplugin {

const char *sourceName(UnrollAdvice::Source S) {
  switch (S) {
  case UnrollAdvice::Source::Model:
    return "model";
  case UnrollAdvice::Source::NoModel:
    return "gcc";
  case UnrollAdvice::Source::Fallback:
    return "fallback";
  }
  return "fallback";
}

UnrollAdvisor::UnrollAdvisor(std::string RunnerConfig, int64_t MaxFactor)
    : Config(RunnerConfig == "none" ? std::string() : std::move(RunnerConfig)),
      MaxFactor(MaxFactor) {}

bool UnrollAdvisor::ensureRunner() {
  if (Runner)
    return true;
  if (CreationTried)
    return false;
  CreationTried = true;
  static const int64_t Shape[] = {1};
  mlbridge_tensor_spec InputSpecs[NumLoopFeatures];
  for (unsigned I = 0; I < NumLoopFeatures; ++I)
    InputSpecs[I] = {LoopFeatureNames[I], MLBRIDGE_INT64, Shape, 1};
  const mlbridge_tensor_spec OutputSpec = {UnrollFactorName, MLBRIDGE_INT64,
                                           Shape, 1};
  mlbridge_runner *Made = nullptr;
  mlbridge_error *Error = nullptr;
  if (mlbridge_runner_create(Config.c_str(), InputSpecs, NumLoopFeatures,
                             &OutputSpec, 1, &Made, &Error) != MLBRIDGE_OK) {
    CreationProblem = std::string("cannot make the runner '") + Config +
                      "': " + mlbridge_error_message(Error);
    mlbridge_error_free(Error);
    return false;
  }
  Runner.reset(Made);
  for (unsigned I = 0; I < NumLoopFeatures; ++I) {
    void *Data = nullptr;
    if (mlbridge_runner_input(Runner.get(), I, MLBRIDGE_INT64, &Data,
                              nullptr) != MLBRIDGE_OK) {
      CreationProblem = std::string("the runner's input '") +
                        LoopFeatureNames[I] +
                        "': " + mlbridge_runner_last_error(Runner.get());
      Runner.reset();
      return false;
    }
    Inputs[I] = static_cast<int64_t *>(Data);
  }
  return true;
}

UnrollAdvice UnrollAdvisor::fallBack(std::string Problem) {
  if (FirstProblem.empty())
    FirstProblem = Problem;
  UnrollAdvice A;
  A.From = UnrollAdvice::Source::Fallback;
  A.Problem = std::move(Problem);
  return A;
}

UnrollAdvice UnrollAdvisor::advise(const char *Function,
                                   const LoopFeatures &F) {
  if (!hasModel())
    return UnrollAdvice();
  ++Asked;
  if (!ensureRunner())
    return fallBack(CreationProblem);
  if (Context != Function) {
    Context = Function;
    if (mlbridge_runner_switch_context(Runner.get(), Function) != MLBRIDGE_OK)
      return fallBack(mlbridge_runner_last_error(Runner.get()));
  }
  for (unsigned I = 0; I < NumLoopFeatures; ++I)
    *Inputs[I] = F.Values[I];
  int64_t Factor = 0;
  if (mlbridge_runner_evaluate_int64(Runner.get(), &Factor) != MLBRIDGE_OK)
    return fallBack(mlbridge_runner_last_error(Runner.get()));
  if (Factor < 0 || Factor > MaxFactor)
    return fallBack("the model answered unroll factor " +
                    std::to_string(Factor) + ", outside [0, " +
                    std::to_string(MaxFactor) + "]");
  ++Answered;
  UnrollAdvice A;
  A.Factor = Factor;
  A.From = UnrollAdvice::Source::Model;
  return A;
}

} // namespace gccplugin
} // namespace mlbridge

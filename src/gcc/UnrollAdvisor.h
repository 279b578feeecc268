//===- gcc/UnrollAdvisor.h - Unroll factors asked of a model ----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// UnrollAdvisor: the GCC plugin's model, reached through mlbridge's C API
/// (mlbridge/mlbridge.h) like any C compiler would. It makes the runner on
/// the first question (a translation unit without loops never connects),
/// asks it for one loop at a time, and checks every answer; whatever fails,
/// the loop keeps GCC's own decision and the advice says why. This file
/// does not include GCC's headers.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_GCC_UNROLLADVISOR_H
#define MLBRIDGE_SRC_GCC_UNROLLADVISOR_H

#include "LoopFeatures.h"

#include "mlbridge/mlbridge.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace mlbridge {
namespace gccplugin {

/// The factor meaning "GCC decides" (no pragma).
constexpr int64_t KeepGccFactor = 0;

/// One loop's unroll factor and where it came from.
struct UnrollAdvice {
  /// Where the factor came from.
  enum class Source {
    Model,    ///< the model's answer
    NoModel,  ///< no runner configured: GCC decides
    Fallback, ///< the runner failed or answered out of range: GCC decides
  };
  /// 0: GCC decides; 1: do not unroll; N > 1: unroll N times.
  int64_t Factor = KeepGccFactor;
  /// Where Factor came from.
  Source From = Source::NoModel;
  /// Why the model's answer was not used (Fallback only).
  std::string Problem;
};

/// The lowercase name of \p S as the decision log writes it.
const char *sourceName(UnrollAdvice::Source S);

/// Asks a runner for unroll factors.
class UnrollAdvisor {
public:
  /// An advisor over the runner configuration \p RunnerConfig (the C API's
  /// string form, e.g. "pipe:/tmp/ch,protocol=extended" or "aot:model.so";
  /// empty or "none": no model), accepting factors up to \p MaxFactor.
  UnrollAdvisor(std::string RunnerConfig, int64_t MaxFactor);

  /// The factor for a loop of function \p Function with features \p F.
  UnrollAdvice advise(const char *Function, const LoopFeatures &F);

  /// Whether a runner is configured (it may still fail to be made).
  bool hasModel() const { return !Config.empty(); }
  /// Why the runner could not be made ("" when it was, or not yet tried).
  const std::string &creationProblem() const { return CreationProblem; }
  /// Loops asked about, answered by the model, fallen back.
  uint64_t asked() const { return Asked; }
  uint64_t answered() const { return Answered; }
  uint64_t fellBack() const { return Asked - Answered; }
  /// The first fallback's reason ("" when none).
  const std::string &firstProblem() const { return FirstProblem; }

private:
  /// Makes the runner and finds its inputs; false (and CreationProblem
  /// set) when it cannot.
  bool ensureRunner();
  /// A fallback advice for \p Problem, counted.
  UnrollAdvice fallBack(std::string Problem);

  /// Frees a runner through the C API.
  struct RunnerDeleter {
    void operator()(mlbridge_runner *R) const { mlbridge_runner_destroy(R); }
  };

  std::string Config;
  int64_t MaxFactor;
  std::unique_ptr<mlbridge_runner, RunnerDeleter> Runner;
  bool CreationTried = false;
  std::string CreationProblem;
  std::array<int64_t *, NumLoopFeatures> Inputs{};
  std::string Context;
  uint64_t Asked = 0;
  uint64_t Answered = 0;
  std::string FirstProblem;
};

} // namespace gccplugin
} // namespace mlbridge

#endif // MLBRIDGE_SRC_GCC_UNROLLADVISOR_H

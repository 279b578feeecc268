//===- llvm/PluginOptions.h - Configuration of the LLVM plugin --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What the inline-advisor plugin is told: LLVM command-line options
/// (-mlbridge-runner=... with opt, `-mllvm -mlbridge-runner=...` with clang,
/// which must then also load the plugin with -fplugin), each with an
/// environment-variable fallback (MLBRIDGE_INLINE_RUNNER=...) for build systems
/// that cannot pass compiler flags through.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_PLUGINOPTIONS_H
#define MLBRIDGE_SRC_LLVM_PLUGINOPTIONS_H

#include "mlbridge/RunnerConfig.h"
#include "support/PluginSettings.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlbridge {

/// The plugin's configuration, resolved from options and environment.
struct PluginOptions {
  /// As given: none (LLVM's default advisor), default (a runner answering
  /// LLVM's own decision), constant, pipe, grpc, onnx, aot, or a runner
  /// configuration's string form (mlbridge/RunnerConfig.h), e.g.
  /// "onnx:/models/inline.onnx".
  std::string Runner;
  /// The runner to create (unless Runner is "none"), resolved from Runner
  /// and the other options.
  RunnerConfig Config;
  /// ONNX file (onnx) or loadable module (aot).
  std::string Model;
  /// Pipe channel base (pipe).
  std::string Channel;
  /// gRPC target (grpc).
  std::string GrpcTarget;
  /// Deadline of every blocking step of a remote runner.
  std::chrono::milliseconds Timeout{10000};
  /// The answer of the constant runner.
  int64_t Constant = 0;
  /// Training log of (features, LLVM's decision, advice) when set.
  std::string LogPath;
  /// Per-module statistics (JSON lines, appended) when set.
  std::string StatsPath;
  /// Compute LLVM's own decision for every call site (counted in the stats)
  /// even when the runner does not need it.
  bool CompareDefault = false;
  /// LLVM's -ml-advisor-size-increase-threshold for this process: the
  /// advisor stops asking the runner once the module grew by this factor.
  /// Unset: LLVM's own value (2.0), except for the "default" runner, whose
  /// cap is lifted so that it reproduces LLVM's default inliner. Infinity
  /// means no cap. A threshold given to LLVM directly always wins.
  std::optional<double> SizeIncreaseThreshold;
  /// Call sites where the advisor gives LLVM's decision without asking the
  /// runner, as for a model whose metadata says it answers LLVM's decision
  /// there: empty (none) or "is_callee_linkonce_odr" (calls of linkonce_odr
  /// functions). For runners in another process (pipes, gRPC), whose model
  /// cannot say it; a training log turns it off.
  std::string DefersWhen;
  /// Where the plugin writes its description (support/PluginDescription.h)
  /// when set; LLVM then decides every call site.
  std::string DescribePath;
  /// Whether the options were valid; otherwise Problem says why and the
  /// plugin gives LLVM's default advice.
  std::string Problem;
};

/// The plugin's options, declared once: LLVM's -mlbridge-KEY, else
/// MLBRIDGE_INLINE_KEY (support/PluginSettings.h).
const std::vector<OptionSpec> &inlineOptionSpecs();

/// The options of this process (parsed command line, then environment).
const PluginOptions &pluginOptions();

} // namespace mlbridge

#endif // MLBRIDGE_SRC_LLVM_PLUGINOPTIONS_H

//===- llvm/InlineRunners.h - Runners the inline advisor asks ---*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// makeInlineRunner(): the mlbridge runner the plugin's inline advisor asks,
/// made by createRunner() (mlbridge/RunnerConfig.h) from the configuration
/// the plugin's options resolve to: pipe or grpc (training: a Python process
/// decides), onnx or aot (deployment, in-process), and the baselines without
/// a model: default (echo:inlining_default, LLVM's own decision) and
/// constant. The grpc and onnx kinds come from modules loaded on demand
/// (RunnerModules.h).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_INLINERUNNERS_H
#define MLBRIDGE_SRC_LLVM_INLINERUNNERS_H

#include "PluginOptions.h"

#include "mlbridge/ModelRunner.h"

#include <memory>
#include <vector>

namespace mlbridge {

/// Name of the extra input carrying LLVM's own decision (as MLGO names it).
inline constexpr const char *DefaultDecisionFeature = "inlining_default";
/// Name of the extra input saying whether the callee has linkonce_odr
/// linkage (a C++ inline function or template instance: every object that
/// calls it without inlining the call carries a copy). Offered to in-process
/// models only; remote peers get exactly LLVM's interactive-mode inputs.
inline constexpr const char *OdrCalleeFeature = "is_callee_linkonce_odr";

/// The model metadata key naming the 0/1 input where the model answers the
/// input "mlbridge.defers_to" names, whatever its other inputs
/// (mlbridge.train.export writes both).
inline constexpr const char *DefersWhenKey = "mlbridge.defers_when";
/// See DefersWhenKey.
inline constexpr const char *DefersToKey = "mlbridge.defers_to";

/// Creates the runner \p O asks for, with \p Inputs and one int64 output
/// \p Decision.
Expected<std::unique_ptr<ModelRunner>>
makeInlineRunner(const PluginOptions &O, std::vector<TensorSpec> Inputs,
                 TensorSpec Decision);

} // namespace mlbridge

#endif // MLBRIDGE_SRC_LLVM_INLINERUNNERS_H

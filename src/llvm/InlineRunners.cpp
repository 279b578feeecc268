//===- llvm/InlineRunners.cpp - Runners the inline advisor asks -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "InlineRunners.h"

#include "modules/RunnerModules.h"

#include "mlbridge/RunnerConfig.h"

namespace mlbridge {

Expected<std::unique_ptr<ModelRunner>>
makeInlineRunner(const PluginOptions &O, std::vector<TensorSpec> Inputs,
                 TensorSpec Decision) {
  RunnerFactories Factories = RunnerFactories::core();
#ifndef MLBRIDGE_HAVE_GRPC
  if (O.Config.Kind == RunnerKind::Grpc)
    return makeError(ErrorCode::Unsupported,
                     "this plugin was built without gRPC");
#endif
#ifndef MLBRIDGE_HAVE_ONNXRUNTIME
  if (O.Config.Kind == RunnerKind::Onnx)
    return makeError(ErrorCode::Unsupported,
                     "this plugin was built without ONNX Runtime");
#endif
#ifndef MLBRIDGE_HAVE_TORCH
  if (O.Config.Kind == RunnerKind::Torch)
    return makeError(ErrorCode::Unsupported,
                     "this plugin was built without LibTorch");
#endif
  if (Error E = addModuleRunners(O.Config.Kind, ownDirectory(), Factories))
    return E;
  return createRunner(O.Config, std::move(Inputs), {std::move(Decision)},
                      Factories);
}

} // namespace mlbridge

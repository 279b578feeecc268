//===- llvm/InlineRunners.cpp - Runners the inline advisor asks -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "InlineRunners.h"

#include "mlbridge/RunnerConfig.h"
#ifdef MLBRIDGE_HAVE_GRPC
#include "mlbridge/GrpcModelRunner.h"
#endif
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
#include "mlbridge/OnnxModelRunner.h"
#endif

namespace mlbridge {

Expected<std::unique_ptr<ModelRunner>>
makeInlineRunner(const PluginOptions &O, std::vector<TensorSpec> Inputs,
                 TensorSpec Decision) {
  RunnerFactories Factories = RunnerFactories::core();
#ifdef MLBRIDGE_HAVE_GRPC
  addGrpcRunners(Factories);
#endif
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
  addOnnxRunners(Factories);
#endif
  return createRunner(O.Config, std::move(Inputs), {std::move(Decision)},
                      Factories);
}

} // namespace mlbridge

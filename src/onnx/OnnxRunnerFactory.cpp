//===- onnx/OnnxRunnerFactory.cpp - The onnx kind of createRunner() -------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/OnnxModelRunner.h"
#include "mlbridge/RunnerConfig.h"

#include "core/DeferredRunner.h"

namespace mlbridge {

void addOnnxRunners(RunnerFactories &Factories) {
  Factories.add(
      RunnerKind::Onnx,
      deferOnnxLoading([](const RunnerConfig &C, std::vector<TensorSpec> In,
                          std::vector<TensorSpec> Out)
                           -> Expected<std::unique_ptr<ModelRunner>> {
        OnnxOptions O;
        O.IntraOpThreads = C.Threads;
        auto R = OnnxModelRunner::createFromFile(C.Argument, std::move(In),
                                                 std::move(Out), O);
        if (!R)
          return R.takeError();
        return std::unique_ptr<ModelRunner>(std::move(*R));
      }));
}

} // namespace mlbridge

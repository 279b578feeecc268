//===- torch/TorchRunnerFactory.cpp - The torch kind of createRunner() ----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/RunnerConfig.h"
#include "mlbridge/TorchModelRunner.h"

namespace mlbridge {

void addTorchRunners(RunnerFactories &Factories) {
  Factories.add(RunnerKind::Torch,
                [](const RunnerConfig &C, std::vector<TensorSpec> In,
                   std::vector<TensorSpec> Out)
                    -> Expected<std::unique_ptr<ModelRunner>> {
                  TorchOptions O;
                  O.IntraOpThreads = C.Threads;
                  auto R = TorchModelRunner::createFromFile(
                      C.Argument, std::move(In), std::move(Out), O);
                  if (!R)
                    return R.takeError();
                  return std::unique_ptr<ModelRunner>(std::move(*R));
                });
}

} // namespace mlbridge

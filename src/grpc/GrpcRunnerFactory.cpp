//===- grpc/GrpcRunnerFactory.cpp - The grpc kind of createRunner() -------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/GrpcModelRunner.h"
#include "mlbridge/RunnerConfig.h"

namespace mlbridge {

void addGrpcRunners(RunnerFactories &Factories) {
  Factories.add(RunnerKind::Grpc,
                [](const RunnerConfig &C, std::vector<TensorSpec> In,
                   std::vector<TensorSpec> Out)
                    -> Expected<std::unique_ptr<ModelRunner>> {
                  GrpcOptions G;
                  G.Target = C.Argument;
                  G.Mode = C.Streaming ? GrpcMode::Streaming : GrpcMode::Unary;
                  G.ConnectTimeout = C.ConnectTimeout;
                  G.CallTimeout = C.Timeout;
                  G.MaxMessageBytes = C.MaxMessageBytes;
                  auto R = GrpcModelRunner::create(
                      std::move(In), std::move(Out), std::move(G));
                  if (!R)
                    return R.takeError();
                  return std::unique_ptr<ModelRunner>(std::move(*R));
                });
}

} // namespace mlbridge

//===- core/RunnerFactories.cpp - createRunner() and the core factories ---===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "BaselineRunners.h"

#include "mlbridge/AotModelRunner.h"
#include "mlbridge/PipeModelRunner.h"
#include "mlbridge/RunnerConfig.h"

namespace mlbridge {
namespace {

/// Upcasts a concrete runner or forwards its error.
template <typename RunnerT>
Expected<std::unique_ptr<ModelRunner>>
upcast(Expected<std::unique_ptr<RunnerT>> R) {
  if (!R)
    return R.takeError();
  return std::unique_ptr<ModelRunner>(std::move(*R));
}

/// How to get an optional kind, for messages.
const char *howToGet(RunnerKind Kind) {
  switch (Kind) {
  case RunnerKind::Grpc:
    return "build mlbridge with gRPC (-DMLBRIDGE_ENABLE_GRPC=ON, gRPC and "
           "protobuf installed); programs of their own link "
           "mlbridge::mlbridge_grpc and call addGrpcRunners()";
  case RunnerKind::Onnx:
    return "build mlbridge with ONNX Runtime "
           "(-DMLBRIDGE_ENABLE_ONNXRUNTIME=ON, tools/fetch_onnxruntime.py); "
           "programs of their own link mlbridge::mlbridge_onnx and call "
           "addOnnxRunners()";
  case RunnerKind::Torch:
    return "build mlbridge with LibTorch (-DMLBRIDGE_ENABLE_TORCH=ON, "
           "libtorch-dev installed); programs of their own link "
           "mlbridge::mlbridge_torch and call addTorchRunners()";
  default:
    break;
  }
  return "use RunnerFactories::core()";
}

} // namespace

RunnerFactories RunnerFactories::core() {
  RunnerFactories F;
  F.add(RunnerKind::Pipe, [](const RunnerConfig &C, std::vector<TensorSpec> In,
                             std::vector<TensorSpec> Out) {
    PipeOptions P;
    P.ChannelBase = C.Argument;
    P.Protocol = C.Protocol;
    P.Serialization = C.Serialization;
    P.OpenTimeout = C.ConnectTimeout;
    P.IoTimeout = C.Timeout;
    P.MaxMessageBytes = C.MaxMessageBytes;
    return upcast(
        PipeModelRunner::create(std::move(In), std::move(Out), std::move(P)));
  });
  F.add(RunnerKind::Aot, [](const RunnerConfig &C, std::vector<TensorSpec> In,
                            std::vector<TensorSpec> Out) {
    return upcast(
        AotInterfaceRunner::load(C.Argument, std::move(In), std::move(Out)));
  });
  F.add(RunnerKind::Constant,
        [](const RunnerConfig &C, std::vector<TensorSpec> In,
           std::vector<TensorSpec> Out)
            -> Expected<std::unique_ptr<ModelRunner>> {
          auto Value = C.constant();
          if (!Value)
            return Value.takeError();
          return createConstantRunner(*Value, std::move(In), std::move(Out));
        });
  F.add(RunnerKind::Echo, [](const RunnerConfig &C, std::vector<TensorSpec> In,
                             std::vector<TensorSpec> Out) {
    return createEchoRunner(C.Argument, std::move(In), std::move(Out));
  });
  return F;
}

void RunnerFactories::add(RunnerKind Kind, RunnerFactory Factory) {
  size_t I = size_t(Kind);
  if (Factories.size() <= I)
    Factories.resize(I + 1);
  Factories[I] = std::move(Factory);
}

const RunnerFactory *RunnerFactories::find(RunnerKind Kind) const {
  size_t I = size_t(Kind);
  return I < Factories.size() && Factories[I] ? &Factories[I] : nullptr;
}

bool RunnerFactories::has(RunnerKind Kind) const { return find(Kind); }

Expected<std::unique_ptr<ModelRunner>>
createRunner(const RunnerConfig &Config, std::vector<TensorSpec> Inputs,
             std::vector<TensorSpec> Outputs,
             const RunnerFactories &Factories) {
  const RunnerFactory *Make = Factories.find(Config.Kind);
  if (!Make)
    return makeError(
        ErrorCode::Unsupported, "the '", runnerKindName(Config.Kind),
        "' runner is not available in this program: ", howToGet(Config.Kind));
  return (*Make)(Config, std::move(Inputs), std::move(Outputs));
}

} // namespace mlbridge

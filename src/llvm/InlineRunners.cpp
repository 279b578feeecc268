//===- llvm/InlineRunners.cpp - Runners the inline advisor asks -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "InlineRunners.h"

#include "mlbridge/AotModelRunner.h"
#include "mlbridge/PipeModelRunner.h"
#ifdef MLBRIDGE_HAVE_GRPC
#include "mlbridge/GrpcModelRunner.h"
#endif
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
#include "mlbridge/OnnxModelRunner.h"
#endif

#include <cstring>

namespace mlbridge {
namespace {

/// A runner without a model: answers LLVM's own decision (input
/// "inlining_default"), or a constant. The baselines that measure what the
/// plugin costs besides the model.
class BaselineRunner final : public ModelRunner {
public:
  static Expected<std::unique_ptr<ModelRunner>>
  create(std::vector<TensorSpec> Inputs, TensorSpec Decision, bool EchoDefault,
         int64_t Constant) {
    std::unique_ptr<BaselineRunner> R(new BaselineRunner());
    if (Error E = R->initBuffers(std::move(Inputs), {std::move(Decision)}))
      return E;
    if (!R->Outputs.spec(0).isElementType<int64_t>() ||
        R->Outputs.spec(0).elementCount() != 1)
      return makeError(ErrorCode::TypeMismatch,
                       "the decision must be one int64");
    R->Constant = Constant;
    if (EchoDefault) {
      auto I = R->inputIndex(DefaultDecisionFeature);
      if (!I)
        return I.takeError();
      R->Echo = R->input<int64_t>(*I);
      if (!R->Echo)
        return makeError(ErrorCode::TypeMismatch, "input '",
                         DefaultDecisionFeature, "' must be int64");
    }
    return std::unique_ptr<ModelRunner>(std::move(R));
  }

private:
  BaselineRunner() = default;
  Error evaluateImpl() override {
    int64_t Answer = Echo ? *Echo : Constant;
    std::memcpy(Outputs.data(0), &Answer, sizeof(Answer));
    return Error::success();
  }
  const int64_t *Echo = nullptr;
  int64_t Constant = 0;
};

} // namespace

Expected<std::unique_ptr<ModelRunner>>
makeInlineRunner(const PluginOptions &O, std::vector<TensorSpec> Inputs,
                 TensorSpec Decision) {
  auto Upcast = [](auto R) -> Expected<std::unique_ptr<ModelRunner>> {
    if (!R)
      return R.takeError();
    return std::unique_ptr<ModelRunner>(std::move(*R));
  };
  if (O.Runner == "default" || O.Runner == "constant")
    return BaselineRunner::create(std::move(Inputs), std::move(Decision),
                                  O.Runner == "default", O.Constant);
  if (O.Runner == "pipe") {
    if (O.Channel.empty())
      return makeError(ErrorCode::InvalidArgument,
                       "-mlbridge-runner=pipe needs -mlbridge-channel=BASE");
    PipeOptions P;
    P.ChannelBase = O.Channel;
    P.OpenTimeout = O.Timeout;
    P.IoTimeout = O.Timeout;
    return Upcast(
        PipeModelRunner::create(std::move(Inputs), {std::move(Decision)}, P));
  }
  if (O.Runner == "grpc") {
#ifdef MLBRIDGE_HAVE_GRPC
    GrpcOptions G;
    G.Target = O.GrpcTarget;
    G.ConnectTimeout = O.Timeout;
    G.CallTimeout = O.Timeout;
    return Upcast(
        GrpcModelRunner::create(std::move(Inputs), {std::move(Decision)}, G));
#else
    return makeError(ErrorCode::Unsupported,
                     "this plugin was built without gRPC");
#endif
  }
  if (O.Runner == "onnx") {
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
    return Upcast(OnnxModelRunner::createFromFile(O.Model, std::move(Inputs),
                                                  {std::move(Decision)}));
#else
    return makeError(ErrorCode::Unsupported,
                     "this plugin was built without ONNX Runtime");
#endif
  }
  if (O.Runner == "aot")
    return Upcast(AotInterfaceRunner::load(O.Model, std::move(Inputs),
                                           {std::move(Decision)}));
  return makeError(ErrorCode::InvalidArgument, "unknown -mlbridge-runner '",
                   O.Runner,
                   "' (none, default, constant, pipe, grpc, onnx, aot)");
}

} // namespace mlbridge

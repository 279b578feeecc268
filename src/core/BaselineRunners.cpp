//===- core/BaselineRunners.cpp - Runners without a model -----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "BaselineRunners.h"

#include "codec/DTypeDispatch.h"

#include <cstring>

namespace mlbridge {
namespace {

/// Writes a fixed answer or copies one input into output 0.
class BaselineRunner final : public ModelRunner {
public:
  /// Sets up the buffers and checks that output 0 exists.
  static Expected<std::unique_ptr<BaselineRunner>>
  make(std::vector<TensorSpec> Inputs, std::vector<TensorSpec> Outputs) {
    std::unique_ptr<BaselineRunner> R(new BaselineRunner());
    if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
      return E;
    if (R->numOutputs() == 0)
      return makeError(ErrorCode::InvalidArgument,
                       "a runner without a model needs an output");
    return R;
  }

  /// The constant answer, as output 0's bytes.
  std::vector<unsigned char> Answer;
  /// The input copied to output 0, when echoing.
  const void *Source = nullptr;

  /// Only an echoed input is read.
  bool readsInput(size_t I) const override {
    return Source && I < numInputs() && Source == Inputs.data(I);
  }

private:
  BaselineRunner() = default;
  Error evaluateImpl() override {
    std::memcpy(Outputs.data(0), Source ? Source : Answer.data(),
                outputSpec(0).byteSize());
    return Error::success();
  }
};

/// Stores \p Value converted to the element type T at \p Out.
struct StoreConverted {
  /// Converts and stores.
  template <typename T> void operator()(int64_t Value, void *Out) const {
    T Converted = static_cast<T>(Value);
    std::memcpy(Out, &Converted, sizeof(T));
  }
};

/// Upcasts a runner or forwards its error.
Expected<std::unique_ptr<ModelRunner>>
upcast(Expected<std::unique_ptr<BaselineRunner>> R) {
  if (!R)
    return R.takeError();
  return std::unique_ptr<ModelRunner>(std::move(*R));
}

} // namespace

Expected<std::unique_ptr<ModelRunner>>
createConstantRunner(int64_t Value, std::vector<TensorSpec> Inputs,
                     std::vector<TensorSpec> Outputs) {
  auto R = BaselineRunner::make(std::move(Inputs), std::move(Outputs));
  if (!R)
    return R.takeError();
  const TensorSpec &Out = (*R)->outputSpec(0);
  if (Out.elementCount() != 1)
    return makeError(ErrorCode::TypeMismatch, "the constant runner's output '",
                     Out.name(), "' must have one element, not ",
                     std::to_string(Out.elementCount()));
  (*R)->Answer.resize(Out.byteSize());
  dispatchDType(Out.type(), StoreConverted(), Value, (*R)->Answer.data());
  return upcast(std::move(R));
}

Expected<std::unique_ptr<ModelRunner>>
createEchoRunner(const std::string &InputName, std::vector<TensorSpec> Inputs,
                 std::vector<TensorSpec> Outputs) {
  auto R = BaselineRunner::make(std::move(Inputs), std::move(Outputs));
  if (!R)
    return R.takeError();
  auto I = (*R)->inputIndex(InputName);
  if (!I)
    return I.takeError();
  const TensorSpec &In = (*R)->inputSpec(*I), &Out = (*R)->outputSpec(0);
  if (In.type() != Out.type() || In.elementCount() != Out.elementCount())
    return makeError(
        ErrorCode::TypeMismatch, "the echo runner copies input '", In.name(),
        "' (", dtypeName(In.type()), " x", std::to_string(In.elementCount()),
        ") into output '", Out.name(), "' (", dtypeName(Out.type()), " x",
        std::to_string(Out.elementCount()), "): types and sizes must match");
  (*R)->Source = (*R)->inputData(*I);
  return upcast(std::move(R));
}

} // namespace mlbridge

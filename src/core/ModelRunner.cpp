//===- core/ModelRunner.cpp - The runner API ------------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/ModelRunner.h"

namespace mlbridge {

ModelRunner::~ModelRunner() = default;

Error ModelRunner::initBuffers(std::vector<TensorSpec> InputSpecs,
                               std::vector<TensorSpec> OutputSpecs) {
  auto In = TensorBuffers::create(std::move(InputSpecs), "inputs");
  if (!In)
    return In.takeError();
  auto Out = TensorBuffers::create(std::move(OutputSpecs), "outputs");
  if (!Out)
    return Out.takeError();
  Inputs = std::move(*In);
  Outputs = std::move(*Out);
  return Error::success();
}

Expected<size_t> ModelRunner::inputIndex(std::string_view Name) const {
  long I = Inputs.indexOf(Name);
  if (I < 0)
    return makeError(ErrorCode::InvalidArgument, "no input named '",
                     std::string(Name), "'");
  return size_t(I);
}

Expected<size_t> ModelRunner::outputIndex(std::string_view Name) const {
  long I = Outputs.indexOf(Name);
  if (I < 0)
    return makeError(ErrorCode::InvalidArgument, "no output named '",
                     std::string(Name), "'");
  return size_t(I);
}

Error ModelRunner::evaluate() {
  if (Broken)
    return Broken;
  return evaluateImpl();
}

Error ModelRunner::switchContext(std::string_view) {
  return Broken ? Broken : Error::success();
}

std::optional<std::string_view>
ModelRunner::metadata(std::string_view Key) const {
  for (const auto &[K, V] : Metadata)
    if (K == Key)
      return V;
  return std::nullopt;
}

void ModelRunner::markBroken(const Error &Why) {
  if (!Broken)
    Broken =
        Error(ErrorCode::Broken, "runner unusable after an earlier error (" +
                                     Why.toString() + ")");
}

Error ModelRunner::typeMismatch(const TensorSpec &Spec, DType Asked,
                                const char *Role) {
  return makeError(ErrorCode::TypeMismatch, Role, " '", Spec.name(), "' is ",
                   dtypeName(Spec.type()), ", not ", dtypeName(Asked));
}

} // namespace mlbridge

//===- llvm/MLModelRunnerAdapter.cpp - mlbridge runners inside LLVM -------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/MLModelRunnerAdapter.h"

#include <cstring>

namespace mlbridge {

Expected<TensorSpec> fromLLVM(const llvm::TensorSpec &Spec) {
  // LLVM lists the same ten types as mlbridge, in the same order, after
  // Invalid.
  int Index = static_cast<int>(Spec.type()) - 1;
  if (Index < 0 || Index >= static_cast<int>(llvm::TensorType::Total) - 1)
    return makeError(ErrorCode::InvalidArgument, "LLVM tensor '", Spec.name(),
                     "' has an invalid type");
  DType Type = static_cast<DType>(Index);
  if (dtypeSize(Type) != Spec.getElementByteSize())
    return makeError(ErrorCode::TypeMismatch, "LLVM tensor '", Spec.name(),
                     "': element size disagrees with mlbridge's ",
                     dtypeName(Type));
  return TensorSpec::create(Spec.name(), Type, Spec.shape(), Spec.port());
}

MLModelRunnerAdapter::MLModelRunnerAdapter(llvm::LLVMContext &Ctx,
                                           std::unique_ptr<ModelRunner> R,
                                           size_t NumFeatures)
    : compat::MLModelRunner(Ctx, AdapterKind, NumFeatures),
      Runner(std::move(R)) {}

Expected<std::unique_ptr<MLModelRunnerAdapter>>
MLModelRunnerAdapter::create(llvm::LLVMContext &Ctx,
                             std::unique_ptr<ModelRunner> Runner,
                             const std::vector<llvm::TensorSpec> &Features) {
  if (!Runner)
    return makeError(ErrorCode::InvalidArgument, "no runner to adapt");
  std::unique_ptr<MLModelRunnerAdapter> A(
      new MLModelRunnerAdapter(Ctx, std::move(Runner), Features.size()));
  for (size_t I = 0; I < Features.size(); ++I) {
    auto Spec = fromLLVM(Features[I]);
    if (!Spec)
      return Spec.takeError();
    void *Buffer = nullptr;
    if (auto J = A->Runner->inputIndex(Spec->name())) {
      const TensorSpec &Have = A->Runner->inputSpec(*J);
      if (Have.type() != Spec->type() ||
          Have.elementCount() != Spec->elementCount())
        return makeError(ErrorCode::TypeMismatch, "LLVM feature '",
                         Spec->name(), "' is ", Spec->toJSON(),
                         ", the runner's input is ", Have.toJSON());
      Buffer = A->Runner->inputData(*J);
    }
    // Without a buffer LLVM allocates a scratch one for the feature.
    A->setUpBufferForTensor(I, Features[I], Buffer);
  }
  return A;
}

void MLModelRunnerAdapter::switchContext(llvm::StringRef Name) {
  if (Error E =
          Runner->switchContext(std::string_view(Name.data(), Name.size())))
    LastError = E;
}

void *MLModelRunnerAdapter::evaluateUntyped() {
  if (Error E = Runner->evaluate()) {
    LastError = E;
    return Fallback;
  }
  return const_cast<void *>(Runner->outputData(0));
}

} // namespace mlbridge

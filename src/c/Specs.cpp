//===- c/Specs.cpp - C API: specs, statuses, handles ----------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Converting between the C API's plain structs and enums and the C++ types:
// mlbridge_tensor_spec arrays to TensorSpecs (every pointer and value
// checked, messages naming the array element at fault), ErrorCode to
// mlbridge_status, and the C handle around a C++ runner.
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include <string>

namespace mlbridge {
namespace capi {

// The C statuses mirror ErrorCode one to one; OUT_OF_MEMORY comes after.
static_assert(int(ErrorCode::Success) == MLBRIDGE_OK, "status order");
static_assert(int(ErrorCode::InvalidArgument) == MLBRIDGE_INVALID_ARGUMENT,
              "status order");
static_assert(int(ErrorCode::Protocol) == MLBRIDGE_PROTOCOL, "status order");
static_assert(int(ErrorCode::TypeMismatch) == MLBRIDGE_TYPE_MISMATCH,
              "status order");
static_assert(int(ErrorCode::Timeout) == MLBRIDGE_TIMEOUT, "status order");
static_assert(int(ErrorCode::PeerClosed) == MLBRIDGE_PEER_CLOSED,
              "status order");
static_assert(int(ErrorCode::IO) == MLBRIDGE_IO, "status order");
static_assert(int(ErrorCode::TooLarge) == MLBRIDGE_TOO_LARGE, "status order");
static_assert(int(ErrorCode::ModelFailure) == MLBRIDGE_MODEL_FAILURE,
              "status order");
static_assert(int(ErrorCode::Unsupported) == MLBRIDGE_UNSUPPORTED,
              "status order");
static_assert(int(ErrorCode::Broken) == MLBRIDGE_BROKEN, "status order");

// The C dtypes are LLVM's order, like DType.
static_assert(int(DType::Float) == MLBRIDGE_FLOAT, "dtype order");
static_assert(int(DType::Double) == MLBRIDGE_DOUBLE, "dtype order");
static_assert(int(DType::Int8) == MLBRIDGE_INT8, "dtype order");
static_assert(int(DType::UInt8) == MLBRIDGE_UINT8, "dtype order");
static_assert(int(DType::Int16) == MLBRIDGE_INT16, "dtype order");
static_assert(int(DType::UInt16) == MLBRIDGE_UINT16, "dtype order");
static_assert(int(DType::Int32) == MLBRIDGE_INT32, "dtype order");
static_assert(int(DType::UInt32) == MLBRIDGE_UINT32, "dtype order");
static_assert(int(DType::Int64) == MLBRIDGE_INT64, "dtype order");
static_assert(int(DType::UInt64) == MLBRIDGE_UINT64, "dtype order");
static_assert(NumDTypes == 10, "the C API lists ten dtypes");

mlbridge_status toStatus(ErrorCode Code) {
  return static_cast<mlbridge_status>(static_cast<int>(Code));
}

Expected<DType> toDType(long long DTypeValue, const std::string &What) {
  if (DTypeValue < 0 || DTypeValue >= NumDTypes)
    return makeError(
        ErrorCode::InvalidArgument, What, " is ", std::to_string(DTypeValue),
        ", not an mlbridge_dtype (0 to ", std::to_string(NumDTypes - 1), ")");
  return static_cast<DType>(DTypeValue);
}

mlbridge_dtype toCDType(DType T) {
  return static_cast<mlbridge_dtype>(static_cast<int>(T));
}

Error nullArgument(const char *Name) {
  return makeError(ErrorCode::InvalidArgument, Name, " is NULL");
}

Expected<std::vector<TensorSpec>> toSpecs(const mlbridge_tensor_spec *Specs,
                                          size_t Num, const char *What) {
  if (!Specs && Num > 0)
    return makeError(ErrorCode::InvalidArgument, What, " is NULL but num_",
                     What, " is ", std::to_string(Num));
  std::vector<TensorSpec> Out;
  Out.reserve(Num);
  for (size_t I = 0; I < Num; ++I) {
    const mlbridge_tensor_spec &S = Specs[I];
    std::string Element = std::string(What) + "[" + std::to_string(I) + "]";
    if (!S.name)
      return makeError(ErrorCode::InvalidArgument, Element, ".name is NULL");
    auto Type = toDType(rawEnum(S.dtype), Element + ".dtype");
    if (!Type)
      return Type.takeError();
    if (!S.shape && S.rank > 0)
      return makeError(ErrorCode::InvalidArgument, Element,
                       ".shape is NULL but its rank is ",
                       std::to_string(S.rank));
    std::vector<int64_t> Shape;
    if (S.rank > 0)
      Shape.assign(S.shape, S.shape + S.rank);
    auto Spec = TensorSpec::create(S.name, *Type, std::move(Shape));
    if (!Spec)
      return Spec.error().withContext(Element);
    Out.push_back(std::move(*Spec));
  }
  if (Error E = checkUniqueNames(Out, What))
    return E;
  return Out;
}

std::unique_ptr<mlbridge_runner>
makeHandle(std::unique_ptr<ModelRunner> Runner) {
  auto H = std::make_unique<mlbridge_runner>();
  auto Copy = [](const TensorSpec &S) {
    return mlbridge_runner::CSpec{S.name(), toCDType(S.type()), S.shape(),
                                  S.elementCount()};
  };
  H->Inputs.reserve(Runner->numInputs());
  for (size_t I = 0; I < Runner->numInputs(); ++I)
    H->Inputs.push_back(Copy(Runner->inputSpec(I)));
  H->Outputs.reserve(Runner->numOutputs());
  for (size_t I = 0; I < Runner->numOutputs(); ++I)
    H->Outputs.push_back(Copy(Runner->outputSpec(I)));
  H->Runner = std::move(Runner);
  return H;
}

} // namespace capi
} // namespace mlbridge

void mlbridge_runner::setError(const char *Message) noexcept {
  setError(Message, "");
}

void mlbridge_runner::setError(const char *Prefix,
                               const char *Detail) noexcept {
  try {
    LastError.assign(Prefix);
    LastError.append(Detail);
    LastErrorLost = false;
  } catch (...) {
    LastError.clear();
    LastErrorLost = true;
  }
}

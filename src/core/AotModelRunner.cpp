//===- core/AotModelRunner.cpp - Binding checks of AOT models -------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/AotModelRunner.h"

namespace mlbridge {
namespace detail {

Error checkAotTensor(const char *Name, const char *DTypeName, size_t Count,
                     const TensorSpec &Spec, const char *Role) {
  auto Type = parseDType(DTypeName);
  if (!Type)
    return Type.takeError();
  if (*Type != Spec.type())
    return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", Name,
                     "' is ", DTypeName, ", the spec says ",
                     dtypeName(Spec.type()));
  if (Count != Spec.elementCount())
    return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", Name,
                     "' has ", std::to_string(Count),
                     " elements, the spec has ",
                     std::to_string(Spec.elementCount()));
  return Error::success();
}

Expected<TensorSpec> aotTensorSpec(const char *Name, const char *DTypeName,
                                   const int64_t *Shape, int Rank) {
  auto Type = parseDType(DTypeName);
  if (!Type)
    return Type.takeError();
  return TensorSpec::create(Name, *Type,
                            std::vector<int64_t>(Shape, Shape + Rank));
}

} // namespace detail
} // namespace mlbridge

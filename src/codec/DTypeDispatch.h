//===- codec/DTypeDispatch.h - Call a template per dtype --------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_CODEC_DTYPEDISPATCH_H
#define MLBRIDGE_CODEC_DTYPEDISPATCH_H

#include "mlbridge/TensorSpec.h"

#include <utility>

namespace mlbridge {

/// Calls `F.template operator()<T>(Args...)` with T the C++ type of \p Type.
template <typename Fn, typename... Args>
decltype(auto) dispatchDType(DType Type, Fn &&F, Args &&...A) {
  switch (Type) {
  case DType::Double:
    return F.template operator()<double>(std::forward<Args>(A)...);
  case DType::Int8:
    return F.template operator()<int8_t>(std::forward<Args>(A)...);
  case DType::UInt8:
    return F.template operator()<uint8_t>(std::forward<Args>(A)...);
  case DType::Int16:
    return F.template operator()<int16_t>(std::forward<Args>(A)...);
  case DType::UInt16:
    return F.template operator()<uint16_t>(std::forward<Args>(A)...);
  case DType::Int32:
    return F.template operator()<int32_t>(std::forward<Args>(A)...);
  case DType::UInt32:
    return F.template operator()<uint32_t>(std::forward<Args>(A)...);
  case DType::Int64:
    return F.template operator()<int64_t>(std::forward<Args>(A)...);
  case DType::UInt64:
    return F.template operator()<uint64_t>(std::forward<Args>(A)...);
  case DType::Float:
    break;
  }
  return F.template operator()<float>(std::forward<Args>(A)...);
}

} // namespace mlbridge

#endif // MLBRIDGE_CODEC_DTYPEDISPATCH_H

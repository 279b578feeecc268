//===- codec/TensorMatcher.cpp - Check decoded tensors --------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "codec/TensorMatcher.h"

namespace mlbridge {

TensorMatcher::TensorMatcher(TensorBuffers &Into) : Into(Into) {
  if (Into.size() > InlineBits)
    ExtraSeen.assign(Into.size() - InlineBits, false);
}

bool TensorMatcher::seen(size_t I) const {
  if (I < InlineBits)
    return (InlineSeen[I / 64] >> (I % 64)) & 1;
  return ExtraSeen[I - InlineBits];
}

void TensorMatcher::markSeen(size_t I) {
  if (I < InlineBits)
    InlineSeen[I / 64] |= uint64_t(1) << (I % 64);
  else
    ExtraSeen[I - InlineBits] = true;
}

Expected<size_t> TensorMatcher::claim(std::string_view Name, DType Type) {
  long Index = Into.indexOf(Name);
  if (Index < 0)
    return makeError(ErrorCode::Protocol, "unexpected tensor '",
                     std::string(Name.substr(0, 128)), "' in message");
  size_t I = size_t(Index);
  if (seen(I))
    return makeError(ErrorCode::Protocol, "tensor '", std::string(Name),
                     "' appears twice in message");
  const TensorSpec &S = Into.spec(I);
  if (S.type() != Type)
    return makeError(ErrorCode::TypeMismatch, "tensor '", S.name(), "' is ",
                     dtypeName(Type), ", expected ", dtypeName(S.type()));
  markSeen(I);
  return I;
}

Error TensorMatcher::checkShape(size_t Index, const int64_t *Dims,
                                size_t NumDims) const {
  const TensorSpec &S = Into.spec(Index);
  uint64_t Count = 1;
  for (size_t D = 0; D < NumDims; ++D) {
    if (Dims[D] < 0 ||
        (Dims[D] > 0 && Count > MaxTensorElements / uint64_t(Dims[D])))
      return makeError(ErrorCode::Protocol, "tensor '", S.name(),
                       "' has an invalid shape");
    Count *= uint64_t(Dims[D]);
  }
  if (Count != S.elementCount())
    return makeError(ErrorCode::TypeMismatch, "tensor '", S.name(), "' has ",
                     std::to_string(Count), " elements, expected ",
                     std::to_string(S.elementCount()));
  return Error::success();
}

Error TensorMatcher::checkByteSize(size_t Index, size_t Bytes) const {
  const TensorSpec &S = Into.spec(Index);
  if (Bytes != S.byteSize())
    return makeError(ErrorCode::TypeMismatch, "tensor '", S.name(), "' has ",
                     std::to_string(Bytes), " bytes of data, expected ",
                     std::to_string(S.byteSize()));
  return Error::success();
}

Error TensorMatcher::finish() const {
  for (size_t I = 0; I < Into.size(); ++I)
    if (!seen(I))
      return makeError(ErrorCode::Protocol, "message lacks tensor '",
                       Into.spec(I).name(), "'");
  return Error::success();
}

} // namespace mlbridge

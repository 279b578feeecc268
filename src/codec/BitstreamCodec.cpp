//===- codec/BitstreamCodec.cpp - Raw tensor bytes ------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "codec/BitstreamCodec.h"

#include <cstring>

namespace mlbridge {

Error BitstreamCodec::encode(std::optional<uint64_t>,
                             const TensorBuffers &Tensors,
                             std::string &Out) const {
  Out.clear();
  for (size_t I = 0; I < Tensors.size(); ++I)
    Out.append(static_cast<const char *>(Tensors.data(I)),
               Tensors.spec(I).byteSize());
  return Error::success();
}

Error BitstreamCodec::decode(std::string_view Payload, TensorBuffers &Into,
                             std::optional<uint64_t> *Observation) const {
  if (Observation)
    Observation->reset();
  if (Payload.size() != Into.totalBytes())
    return makeError(ErrorCode::Protocol, "bitstream message has ",
                     std::to_string(Payload.size()), " bytes, expected ",
                     std::to_string(Into.totalBytes()));
  size_t Offset = 0;
  for (size_t I = 0; I < Into.size(); ++I) {
    size_t N = Into.spec(I).byteSize();
    std::memcpy(Into.data(I), Payload.data() + Offset, N);
    Offset += N;
  }
  return Error::success();
}

} // namespace mlbridge

//===- codec/BitstreamCodec.h - Raw tensor bytes ----------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_CODEC_BITSTREAMCODEC_H
#define MLBRIDGE_CODEC_BITSTREAMCODEC_H

#include "mlbridge/Codec.h"

namespace mlbridge {

/// The raw bytes of every tensor in schema order (LLVM's training-log body).
class BitstreamCodec final : public Codec {
public:
  Format format() const override { return Format::Bitstream; }
  Error encode(std::optional<uint64_t> Observation,
               const TensorBuffers &Tensors, std::string &Out) const override;
  Error decode(std::string_view Payload, TensorBuffers &Into,
               std::optional<uint64_t> *Observation) const override;
};

} // namespace mlbridge

#endif // MLBRIDGE_CODEC_BITSTREAMCODEC_H

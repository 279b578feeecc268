//===- codec/JsonCodec.h - JSON messages ------------------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_CODEC_JSONCODEC_H
#define MLBRIDGE_CODEC_JSONCODEC_H

#include "mlbridge/Codec.h"

namespace mlbridge {

/// `{"observation":N,"tensors":[{"name","type","shape","data"}...]}`, the
/// canonical form of docs/protocol.md.
class JsonCodec final : public Codec {
public:
  Format format() const override { return Format::Json; }
  Error encode(std::optional<uint64_t> Observation,
               const TensorBuffers &Tensors, std::string &Out) const override;
  Error decode(std::string_view Payload, TensorBuffers &Into,
               std::optional<uint64_t> *Observation) const override;
};

} // namespace mlbridge

#endif // MLBRIDGE_CODEC_JSONCODEC_H

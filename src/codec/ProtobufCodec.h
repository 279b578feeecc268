//===- codec/ProtobufCodec.h - protobuf messages ----------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_CODEC_PROTOBUFCODEC_H
#define MLBRIDGE_CODEC_PROTOBUFCODEC_H

#include "mlbridge/Codec.h"

namespace mlbridge {

/// mlbridge.v1.TensorMessage (proto/mlbridge/v1/tensor.proto), written and
/// read directly in the protobuf wire format: no libprotobuf dependency, no
/// allocation, output identical to the official serialiser.
class ProtobufCodec final : public Codec {
public:
  Format format() const override { return Format::Protobuf; }
  Error encode(std::optional<uint64_t> Observation,
               const TensorBuffers &Tensors, std::string &Out) const override;
  Error decode(std::string_view Payload, TensorBuffers &Into,
               std::optional<uint64_t> *Observation) const override;
};

} // namespace mlbridge

#endif // MLBRIDGE_CODEC_PROTOBUFCODEC_H

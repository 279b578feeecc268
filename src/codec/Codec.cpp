//===- codec/Codec.cpp - Message serialisations ---------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/Codec.h"

#include "codec/BitstreamCodec.h"
#include "codec/JsonCodec.h"
#include "codec/ProtobufCodec.h"

namespace mlbridge {

Codec::~Codec() = default;

const char *formatName(Format F) {
  switch (F) {
  case Format::Bitstream:
    return "bitstream";
  case Format::Json:
    return "json";
  case Format::Protobuf:
    return "protobuf";
  }
  return "unknown";
}

Expected<Format> parseFormat(std::string_view Name) {
  for (Format F : {Format::Bitstream, Format::Json, Format::Protobuf})
    if (Name == formatName(F))
      return F;
  return makeError(ErrorCode::InvalidArgument, "unknown format '",
                   std::string(Name.substr(0, 64)),
                   "' (expected bitstream, json or protobuf)");
}

const Codec &getCodec(Format F) {
  static const BitstreamCodec Bitstream;
  static const JsonCodec Json;
  static const ProtobufCodec Protobuf;
  switch (F) {
  case Format::Json:
    return Json;
  case Format::Protobuf:
    return Protobuf;
  case Format::Bitstream:
    break;
  }
  return Bitstream;
}

} // namespace mlbridge

//===- fuzz_protobuf_codec.cpp - Fuzz the protobuf codec ------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Codec::decode of ProtobufCodec (and support/ProtoWire.h under it) against the
// schemas of the golden cases (decodeAgainstSchemas in FuzzSupport.h, with its
// round-trip oracle). Seeds: tests/golden/*.bin.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  mlbridge::fuzz::decodeAgainstSchemas(mlbridge::Format::Protobuf,
                                       mlbridge::fuzz::asView(Data, Size));
  return 0;
}

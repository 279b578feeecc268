//===- fuzz_json_codec.cpp - Fuzz the json codec --------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Codec::decode of JsonCodec (and the json::Reader under it) against the
// schemas of the golden cases (decodeAgainstSchemas in FuzzSupport.h, with its
// round-trip oracle). Seeds: tests/golden/*.bin.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  mlbridge::fuzz::decodeAgainstSchemas(mlbridge::Format::Json,
                                       mlbridge::fuzz::asView(Data, Size));
  return 0;
}

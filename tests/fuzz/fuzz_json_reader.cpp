//===- fuzz_json_reader.cpp - Fuzz support/Json.h's pull reader -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// json::Reader on any text: a walk through every value with the typed
// methods (objects, arrays, strings with escapes, number tokens parsed by
// json::parseNumber as floating-point, 64-bit and 8-bit integers), which
// must accept exactly the texts that skipValue() accepts; then a short input
// as one number token of every element type, and readIntArray.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "support/Json.h"

using namespace mlbridge;

namespace {
constexpr int MaxDepth = 64;

template <typename... T> void parseAs(std::string_view Token) {
  ((void)json::parseNumber<T>(Token), ...);
}

/// Longest input also parsed as a number token of every element type.
constexpr size_t MaxTokenInput = 64;

Error walk(json::Reader &R, int Depth) {
  if (Depth > MaxDepth)
    return R.fail("nesting too deep");
  std::string Scratch;
  if (R.peekIs('{'))
    return R.forEachMember(
        Scratch, [&](std::string_view) { return walk(R, Depth + 1); });
  if (R.peekIs('['))
    return R.forEachElement([&] { return walk(R, Depth + 1); });
  if (R.peekIs('"')) {
    auto S = R.readString(Scratch);
    return S ? Error::success() : S.takeError();
  }
  size_t Start = R.offset();
  auto Token = R.readNumberToken();
  if (!Token) {
    R.seek(Start); // true, false, null, or an error
    return R.skipValue();
  }
  parseAs<float, double, int8_t, int64_t, uint64_t>(*Token);
  return Error::success();
}

Error walkDocument(std::string_view Text) {
  json::Reader R(Text);
  if (Error E = walk(R, 0))
    return E;
  return R.expectEnd();
}

Error skipDocument(std::string_view Text) {
  json::Reader R(Text);
  if (Error E = R.skipValue())
    return E;
  return R.expectEnd();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string_view Text = fuzz::asView(Data, Size);
  Error Walked = walkDocument(Text), Skipped = skipDocument(Text);
  if (bool(Walked) != bool(Skipped))
    fuzz::die("walking and skipping disagree",
              Walked ? Walked : Skipped.withContext("only skipping failed"));
  if (Size <= MaxTokenInput)
    parseAs<float, double, int8_t, uint8_t, int16_t, uint16_t, int32_t,
            uint32_t, int64_t, uint64_t>(Text);
  int64_t Values[8];
  size_t Count = 0;
  json::Reader R(Text);
  (void)R.readIntArray(Values, 8, Count);
  if (Count > 8)
    fuzz::die("readIntArray overflowed",
              makeError(ErrorCode::Protocol, std::to_string(Count)));
  return 0;
}

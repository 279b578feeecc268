//===- CodecMalformedTest.cpp - Decoders reject bad input cleanly ---------===//

#include "mlbridge/Codec.h"

#include "TestHelpers.h"

#include <random>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
TensorBuffers twoTensors() {
  return makeBuffers(
      {TensorSpec::of<int64_t>("a", {2}), TensorSpec::of<float>("b", {1})});
}

void expectError(Format F, std::string_view Payload, ErrorCode Code,
                 const std::string &Mentions) {
  TensorBuffers B = twoTensors();
  Error E = getCodec(F).decode(Payload, B);
  ASSERT_TRUE(bool(E)) << "accepted: " << Payload;
  EXPECT_EQ(E.code(), Code) << E.toString();
  EXPECT_NE(E.message().find(Mentions), std::string::npos) << E.toString();
}
} // namespace

TEST(CodecMalformed, BitstreamWrongSize) {
  expectError(Format::Bitstream, std::string(19, 'x'), ErrorCode::Protocol,
              "19 bytes, expected 20");
  expectError(Format::Bitstream, std::string(21, 'x'), ErrorCode::Protocol,
              "21 bytes");
}

TEST(CodecMalformed, JsonErrors) {
  const std::string A =
      R"({"name":"a","type":"int64_t","shape":[2],"data":[1,2]})";
  const std::string B =
      R"({"name":"b","type":"float","shape":[1],"data":[0.5]})";
  expectError(Format::Json, "", ErrorCode::Protocol, "expected '{'");
  expectError(Format::Json, "{\"tensors\":[" + A + "]}", ErrorCode::Protocol,
              "lacks tensor 'b'");
  expectError(Format::Json, "{\"tensors\":[" + A + "," + B + "," + A + "]}",
              ErrorCode::Protocol, "appears twice");
  expectError(
      Format::Json,
      R"({"tensors":[{"name":"zz","type":"float","shape":[1],"data":[1]}]})",
      ErrorCode::Protocol, "unexpected tensor 'zz'");
  expectError(
      Format::Json,
      R"({"tensors":[{"name":"a","type":"int32_t","shape":[2],"data":[1,2]}]})",
      ErrorCode::TypeMismatch, "'a' is int32_t, expected int64_t");
  expectError(
      Format::Json,
      R"({"tensors":[{"name":"a","type":"int64_t","shape":[3],"data":[1,2,3]}]})",
      ErrorCode::TypeMismatch, "3 elements, expected 2");
  expectError(
      Format::Json,
      R"({"tensors":[{"name":"a","type":"int64_t","shape":[2],"data":[1,2,3]}]})",
      ErrorCode::TypeMismatch, "more than 2");
  expectError(
      Format::Json,
      R"({"tensors":[{"name":"a","type":"int64_t","shape":[2],"data":[1,2.5]}]})",
      ErrorCode::Protocol, "tensor 'a'");
  expectError(Format::Json, "{\"tensors\":[" + A + "," + B, ErrorCode::Protocol,
              "malformed JSON");
  expectError(Format::Json, R"({"error":"policy exploded"})",
              ErrorCode::ModelFailure, "policy exploded");
  expectError(Format::Json, R"({"tensors":[]} trailing)", ErrorCode::Protocol,
              "trailing");
}

TEST(CodecMalformed, ProtobufErrors) {
  // Field 2 (tensors) claiming 2^40 bytes: rejected without allocating.
  expectError(Format::Protobuf, std::string("\x12\x80\x80\x80\x80\x80\x20", 7),
              ErrorCode::Protocol, "exceeds");
  expectError(Format::Protobuf, std::string("\x08\xff\xff", 3),
              ErrorCode::Protocol, "truncated varint");
  expectError(Format::Protobuf, std::string(11, '\xff'), ErrorCode::Protocol,
              "varint");
  // A tensor with dtype 99.
  expectError(Format::Protobuf,
              std::string("\x12\x05\x0a\x01"
                          "a\x10\x63",
                          7),
              ErrorCode::Protocol, "invalid dtype 99");
  // Group wire type.
  expectError(Format::Protobuf, std::string("\x0b", 1), ErrorCode::Protocol,
              "wire type");
  expectError(Format::Protobuf, std::string("\x1a\x0epolicy failed!", 16),
              ErrorCode::ModelFailure, "policy failed!");
  // 'a' (int64 [2]) with 15 bytes of data instead of 16.
  std::string Short("\x12\x19\x0a\x01"
                    "a\x10\x09\x1a\x01\x02\x22\x0f",
                    12);
  Short.append(15, '\x01');
  expectError(Format::Protobuf, Short, ErrorCode::TypeMismatch,
              "15 bytes of data, expected 16");
}

TEST(CodecMalformed, RandomGarbageNeverCrashes) {
  std::mt19937 R(42);
  for (Format F : {Format::Bitstream, Format::Json, Format::Protobuf}) {
    TensorBuffers Good = twoTensors();
    std::string Valid;
    ASSERT_OK(getCodec(F).encode(9, Good, Valid));
    for (int I = 0; I < 3000; ++I) {
      std::string S = Valid;
      int Flips = 1 + int(R() % 4);
      for (int J = 0; J < Flips && !S.empty(); ++J)
        S[R() % S.size()] = char(R());
      if (R() % 3 == 0)
        S.resize(R() % (S.size() + 1));
      TensorBuffers B = twoTensors();
      (void)getCodec(F).decode(S, B); // must not crash, hang or leak
    }
  }
}

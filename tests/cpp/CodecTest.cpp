//===- CodecTest.cpp - Round trips through every serialisation ------------===//

#include "mlbridge/Codec.h"

#include "TestHelpers.h"

#include <cmath>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
class CodecRoundTrip : public ::testing::TestWithParam<Format> {};
} // namespace

TEST_P(CodecRoundTrip, AllDTypesAndShapes) {
  const Codec &C = getCodec(GetParam());
  EXPECT_EQ(C.format(), GetParam());
  for (uint32_t Seed = 1; Seed <= 20; ++Seed) {
    TensorBuffers In = makeBuffers(allDTypeSpecs());
    TensorBuffers Out = makeBuffers(allDTypeSpecs());
    fillValues(In, Seed);
    std::string Bytes;
    ASSERT_OK(C.encode(Seed * 1000, In, Bytes));
    std::optional<uint64_t> Obs;
    ASSERT_OK(C.decode(Bytes, Out, &Obs));
    EXPECT_TRUE(sameBytes(In, Out))
        << formatName(GetParam()) << " seed " << Seed;
    if (GetParam() != Format::Bitstream) {
      ASSERT_TRUE(Obs.has_value());
      EXPECT_EQ(*Obs, Seed * 1000);
    }
  }
}

TEST_P(CodecRoundTrip, EncodingReusesTheBuffer) {
  const Codec &C = getCodec(GetParam());
  TensorBuffers In = makeBuffers(allDTypeSpecs());
  fillValues(In, 7);
  std::string Bytes;
  ASSERT_OK(C.encode(1, In, Bytes));
  const char *Data = Bytes.data();
  size_t Capacity = Bytes.capacity();
  for (int I = 0; I < 100; ++I)
    ASSERT_OK(C.encode(2, In, Bytes));
  EXPECT_EQ(Bytes.data(), Data);
  EXPECT_EQ(Bytes.capacity(), Capacity);
}

TEST_P(CodecRoundTrip, EmptyMessageAndZeroSizedTensor) {
  const Codec &C = getCodec(GetParam());
  TensorBuffers In = makeBuffers({*TensorSpec::create("e", DType::Float, {0}),
                                  TensorSpec::of<int8_t>("one", {1})});
  TensorBuffers Out = makeBuffers(In.specs());
  *static_cast<int8_t *>(In.data(1)) = -5;
  std::string Bytes;
  ASSERT_OK(C.encode(0, In, Bytes));
  ASSERT_OK(C.decode(Bytes, Out));
  EXPECT_EQ(*static_cast<int8_t *>(Out.data(1)), -5);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, CodecRoundTrip,
                         ::testing::Values(Format::Bitstream, Format::Json,
                                           Format::Protobuf),
                         [](const auto &Info) {
                           return std::string(formatName(Info.param));
                         });

TEST(Codec, JsonCanonicalForm) {
  TensorBuffers B = makeBuffers(
      {TensorSpec::of<float>("a", {2}), TensorSpec::of<int64_t>("b", {})});
  static_cast<float *>(B.data(0))[0] = 1.5f;
  static_cast<float *>(B.data(0))[1] = -0.0f;
  *static_cast<int64_t *>(B.data(1)) = -9;
  std::string S;
  ASSERT_OK(getCodec(Format::Json).encode(3, B, S));
  EXPECT_EQ(S, R"({"observation":3,"tensors":[{"name":"a","type":"float",)"
               R"("shape":[2],"data":[1.5,-0]},{"name":"b","type":"int64_t",)"
               R"("shape":[],"data":[-9]}]})");
  ASSERT_OK(getCodec(Format::Json).encode(std::nullopt, B, S));
  EXPECT_EQ(S.rfind(R"({"tensors":)", 0), 0u);
}

TEST(Codec, JsonAcceptsReorderedKeysAndWhitespace) {
  TensorBuffers B = makeBuffers({TensorSpec::of<double>("x", {3})});
  ASSERT_OK(
      getCodec(Format::Json)
          .decode(
              R"( { "extra": [1, {"a": null}], "tensors": [ { "data": [1, -2.5e3, NaN],)"
              R"( "shape": [3], "type": "double", "name": "x" } ] } )",
              B));
  const double *D = static_cast<const double *>(B.data(0));
  EXPECT_EQ(D[0], 1.0);
  EXPECT_EQ(D[1], -2500.0);
  EXPECT_TRUE(std::isnan(D[2]));
}

TEST(Codec, ProtobufMatchesHandComputedBytes) {
  TensorBuffers B = makeBuffers({TensorSpec::of<uint8_t>("m", {2})});
  static_cast<uint8_t *>(B.data(0))[0] = 7;
  static_cast<uint8_t *>(B.data(0))[1] = 10;
  std::string S;
  ASSERT_OK(getCodec(Format::Protobuf).encode(5, B, S));
  // observation=5; tensors{name="m", dtype=UINT8(4), shape=[2], data="\7\n"}
  const char Expected[] = "\x08\x05\x12\x0c\x0a\x01m\x10\x04\x1a\x01\x02"
                          "\x22\x02\x07\x0a";
  EXPECT_EQ(S, std::string(Expected, sizeof(Expected) - 1));
}

TEST(Codec, ParseFormat) {
  EXPECT_EQ(*parseFormat("json"), Format::Json);
  EXPECT_FALSE(bool(parseFormat("xml")));
}

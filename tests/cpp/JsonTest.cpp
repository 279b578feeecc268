//===- JsonTest.cpp - Internal JSON helpers -------------------------------===//

#include "support/Json.h"

#include "TestHelpers.h"

#include <cmath>
#include <limits>

using namespace mlbridge;

TEST(Json, FloatsUseShortestRoundTripForm) {
  auto F = [](float V) {
    std::string S;
    json::appendFloat(S, V);
    return S;
  };
  auto D = [](double V) {
    std::string S;
    json::appendDouble(S, V);
    return S;
  };
  EXPECT_EQ(F(0.1f), "0.1");
  EXPECT_EQ(F(2.0f), "2");
  EXPECT_EQ(F(-0.0f), "-0");
  EXPECT_EQ(F(1e20f), "1e+20");
  EXPECT_EQ(F(1.5e-7f), "1.5e-07");
  EXPECT_EQ(F(std::numeric_limits<float>::quiet_NaN()), "NaN");
  EXPECT_EQ(F(-std::numeric_limits<float>::infinity()), "-Infinity");
  EXPECT_EQ(D(0.1), "0.1");
  EXPECT_EQ(D(1e16), "1e+16");
  EXPECT_EQ(D(123456.0), "123456");
  EXPECT_EQ(D(5e-324), "5e-324");
}

TEST(Json, NumbersParseBackExactly) {
  for (float V : {0.1f, 3.4028235e38f, 1.17549435e-38f, 1e-45f, -7.25f}) {
    std::string S;
    json::appendFloat(S, V);
    auto Back = json::parseNumber<float>(S);
    ASSERT_TRUE(bool(Back)) << S;
    EXPECT_EQ(*Back, V) << S;
  }
  EXPECT_TRUE(std::isnan(*json::parseNumber<double>("NaN")));
  EXPECT_FALSE(bool(json::parseNumber<int8_t>("128")));
  EXPECT_FALSE(bool(json::parseNumber<uint8_t>("-1")));
  EXPECT_FALSE(bool(json::parseNumber<int32_t>("1.5")));
  EXPECT_EQ(*json::parseNumber<uint64_t>("18446744073709551615"),
            std::numeric_limits<uint64_t>::max());
}

TEST(Json, StringsEscapeAndUnescape) {
  std::string S;
  json::appendString(S, std::string("a\"b\\c\n\x01", 7));
  EXPECT_EQ(S, "\"a\\\"b\\\\c\\n\\u0001\"");
  json::Reader R(S);
  std::string Scratch;
  auto Back = R.readString(Scratch);
  ASSERT_TRUE(bool(Back));
  EXPECT_EQ(*Back, std::string("a\"b\\c\n\x01", 7));
}

TEST(Json, DeepNestingIsAnErrorNotACrash) {
  std::string Deep(100000, '[');
  json::Reader R(Deep);
  Error E = R.skipValue();
  ASSERT_TRUE(bool(E));
  EXPECT_NE(E.message().find("nesting"), std::string::npos);
}

TEST(Json, ObjectLinesAreOneObjectPerLineWithNestedMembers) {
  const int64_t Sizes[] = {8, -1, 0};
  json::ObjectLine L;
  L.string("name", "a\"b\n")
      .integer("n", -3)
      .begin("features")
      .integer("x", 1)
      .integers("sizes", Sizes, 3)
      .end()
      .boolean("ok", true)
      .raw("none", "null")
      .number("us", 1.5);
  EXPECT_EQ(L.line(), "{\"name\":\"a\\\"b\\n\",\"n\":-3,\"features\":{\"x\":1,"
                      "\"sizes\":[8,-1,0]},\"ok\":true,\"none\":null,"
                      "\"us\":1.5}\n");
  // A nested object left open is closed by line(); an empty one is {}.
  json::ObjectLine Open;
  Open.begin("a").begin("b");
  EXPECT_EQ(Open.line(), "{\"a\":{\"b\":{}}}\n");
  EXPECT_EQ(json::ObjectLine().line(), "{}\n");
}

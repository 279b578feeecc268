//===- TensorSpecTest.cpp - TensorSpec and dtypes -------------------------===//

#include "mlbridge/TensorSpec.h"

#include "TestHelpers.h"

using namespace mlbridge;

TEST(TensorSpec, DTypeNamesAndSizesMatchLLVM) {
  const char *Names[] = {"float",   "double",   "int8_t",  "uint8_t",
                         "int16_t", "uint16_t", "int32_t", "uint32_t",
                         "int64_t", "uint64_t"};
  size_t Sizes[] = {4, 8, 1, 1, 2, 2, 4, 4, 8, 8};
  for (int I = 0; I < NumDTypes; ++I) {
    EXPECT_STREQ(dtypeName(DType(I)), Names[I]);
    EXPECT_EQ(dtypeSize(DType(I)), Sizes[I]);
    auto Parsed = parseDType(Names[I]);
    ASSERT_TRUE(bool(Parsed));
    EXPECT_EQ(*Parsed, DType(I));
  }
  EXPECT_FALSE(bool(parseDType("bool")));
}

TEST(TensorSpec, JsonIsLLVMsForm) {
  auto S = TensorSpec::of<int64_t>("mask", {1, 33});
  EXPECT_EQ(S.toJSON(),
            R"({"name":"mask","type":"int64_t","port":0,"shape":[1,33]})");
  EXPECT_EQ(S.elementCount(), 33u);
  EXPECT_EQ(S.byteSize(), 264u);
  auto Back = TensorSpec::fromJSON(S.toJSON());
  ASSERT_TRUE(bool(Back)) << Back.error().toString();
  EXPECT_EQ(*Back, S);
}

TEST(TensorSpec, FromJsonAcceptsAnyKeyOrderAndSpaces) {
  auto S = TensorSpec::fromJSON(
      R"( { "shape" : [ 2 , 3 ], "port": 1, "type":"float", "name":"w\u00e9", "x": {"y":[1]} } )");
  ASSERT_TRUE(bool(S)) << S.error().toString();
  EXPECT_EQ(S->name(), "w\xc3\xa9");
  EXPECT_EQ(S->type(), DType::Float);
  EXPECT_EQ(S->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(S->port(), 1);
}

TEST(TensorSpec, ScalarHasOneElement) {
  auto S = TensorSpec::create("s", DType::Double, {});
  ASSERT_TRUE(bool(S));
  EXPECT_EQ(S->elementCount(), 1u);
  EXPECT_EQ(S->toJSON(), R"({"name":"s","type":"double","port":0,"shape":[]})");
}

TEST(TensorSpec, RejectsInvalidSpecs) {
  EXPECT_EQ(TensorSpec::create("", DType::Float, {1}).error().code(),
            ErrorCode::InvalidArgument);
  EXPECT_FALSE(bool(TensorSpec::create("n", DType::Float, {-1})));
  EXPECT_FALSE(
      bool(TensorSpec::create("big", DType::Float, {1 << 30, 1 << 30, 4})));
  for (const char *Bad :
       {"", "{", "[]", R"({"name":"a","type":"float"})",
        R"({"name":"a","type":"bool","shape":[1]})",
        R"({"name":"a","type":"float","shape":[1.5]})",
        R"({"name":"a","type":"float","shape":[1]} x)",
        R"({"name":"a","type":"float","shape":[99999999999999999999]})"}) {
    auto S = TensorSpec::fromJSON(Bad);
    EXPECT_FALSE(bool(S)) << Bad;
  }
}

TEST(TensorSpec, DuplicateNamesAreRejected) {
  std::vector<TensorSpec> Specs = {TensorSpec::of<float>("a"),
                                   TensorSpec::of<int64_t>("a")};
  Error E = checkUniqueNames(Specs, "inputs");
  ASSERT_TRUE(bool(E));
  EXPECT_NE(E.message().find("'a'"), std::string::npos);
}

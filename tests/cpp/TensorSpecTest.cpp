//===- TensorSpecTest.cpp - TensorSpec and dtypes -------------------------===//

#include "mlbridge/TensorSpec.h"
#include "mlbridge/TensorBuffers.h"
#include "mlbridge/TrainingLogWriter.h"

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

TEST(TensorSpec, OfMarksAnInvalidShapeInsteadOfChangingIt) {
  struct Case {
    std::vector<int64_t> Shape;
    const char *Problem;
  };
  const Case Cases[] = {
      {{2, -1}, "tensor 'w': negative dimension -1 in shape [2,-1]"},
      {std::vector<int64_t>(33, 1),
       "tensor 'w': 33 dimensions, at most 32 are supported"},
      {{1 << 30, 1 << 30, 4},
       "tensor 'w': shape [1073741824,1073741824,4] has more than 2^40 "
       "elements"},
      {{0, int64_t(1) << 41},
       "tensor 'w': dimension 2199023255552 in shape [0,2199023255552] is "
       "larger than 2^40"},
  };
  for (const Case &C : Cases) {
    TensorSpec S = TensorSpec::of<float>("w", C.Shape);
    EXPECT_FALSE(S.isValid()) << C.Problem;
    EXPECT_EQ(S.shape(), C.Shape) << "the shape is kept, not made a scalar";
    EXPECT_EQ(S.elementCount(), 0u);
    EXPECT_EQ(S.byteSize(), 0u);
    EXPECT_EQ(S.validationError().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(S.validationError().message(), C.Problem);
    // create() refuses the same spec with the same error.
    auto Created = TensorSpec::create("w", DType::Float, C.Shape);
    ASSERT_FALSE(bool(Created));
    EXPECT_EQ(Created.error().message(), C.Problem);
  }
  TensorSpec NoName = TensorSpec::of<int64_t>("");
  EXPECT_FALSE(NoName.isValid());
  EXPECT_EQ(NoName.validationError().message(), "tensor name is empty");

  // Valid edge cases stay valid.
  for (const std::vector<int64_t> &Shape :
       {std::vector<int64_t>{}, std::vector<int64_t>{0, 3},
        std::vector<int64_t>(32, 1), std::vector<int64_t>{int64_t(1) << 40},
        std::vector<int64_t>{1 << 20, 1 << 20}}) {
    TensorSpec S = TensorSpec::of<int8_t>("ok", Shape);
    EXPECT_TRUE(S.isValid()) << S.validationError().toString();
    EXPECT_FALSE(bool(S.validationError()));
    EXPECT_TRUE(bool(TensorSpec::create("ok", DType::Int8, Shape)));
  }
  EXPECT_EQ(TensorSpec::of<int8_t>("ok", {0, 3}).elementCount(), 0u);
  EXPECT_EQ(TensorSpec::of<int8_t>("ok", {}).elementCount(), 1u);
}

TEST(TensorSpec, InvalidSpecsAreRefusedWhereverSpecsAreTaken) {
  TensorSpec Bad = TensorSpec::of<float>("w", {-2});
  auto B = TensorBuffers::create({TensorSpec::of<float>("a"), Bad}, "inputs");
  ASSERT_FALSE(bool(B));
  EXPECT_EQ(B.error().message(),
            "inputs: tensor 'w': negative dimension -2 in shape [-2]");
  Error E = checkSpecs({Bad}, "features");
  EXPECT_EQ(E.code(), ErrorCode::InvalidArgument);
  // The spec check comes before the file is created.
  auto Log = TrainingLogWriter::create("/nonexistent/dir/log", {Bad});
  ASSERT_FALSE(bool(Log));
  EXPECT_EQ(Log.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Log.error().message().find("tensor 'w'"), std::string::npos);
  auto LogScore = TrainingLogWriter::create("/nonexistent/dir/log",
                                            {TensorSpec::of<float>("a")}, Bad);
  ASSERT_FALSE(bool(LogScore));
  EXPECT_EQ(LogScore.error().message(),
            "training log score: tensor 'w': negative dimension -2 in shape "
            "[-2]");
}

TEST(TensorSpec, FromJsonRefusesMoreThan32Dimensions) {
  std::string Shape;
  for (int I = 0; I < 33; ++I)
    Shape += I ? ",1" : "1";
  auto S = TensorSpec::fromJSON(R"({"name":"a","type":"float","shape":[)" +
                                Shape + "]}");
  ASSERT_FALSE(bool(S));
  EXPECT_NE(S.error().message().find("33 dimensions"), std::string::npos);
}

//===- OnnxRunnerTest.cpp - In-process ONNX Runtime runner ----------------===//
//
// Models come from tools/make_onnx_test_models.py (onnx.helper), with numpy
// reference outputs; the runner must agree within 1e-5.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/OnnxModelRunner.h"
#include "mlbridge/RunnerConfig.h"

#include "OnnxModelBytes.h"
#include "TestHelpers.h"

#include <fstream>

#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
class OnnxRunner : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    Dir = ::testing::TempDir() + "/mlbridge-onnx-models";
    std::string Cmd = testPython() + " " + MLBRIDGE_SOURCE_DIR +
                      "/tools/make_onnx_test_models.py " + Dir;
    Made = havePython() && std::system(Cmd.c_str()) == 0;
  }
  void SetUp() override {
    if (!Made)
      GTEST_SKIP() << "could not build the test models (needs Python onnx)";
  }
  static std::vector<TensorSpec> mlpIn() {
    return {TensorSpec::of<float>("x", {1, 64})};
  }
  static std::vector<TensorSpec> mlpOut() {
    return {TensorSpec::of<float>("y", {1, 1})};
  }
  static std::string Dir;
  static bool Made;
};
std::string OnnxRunner::Dir;
bool OnnxRunner::Made = false;
} // namespace

TEST_F(OnnxRunner, MlpMatchesTheNumpyReference) {
  ASSERT_EXPECTED(
      R, OnnxModelRunner::createFromFile(Dir + "/mlp.onnx", mlpIn(), mlpOut()));
  std::string Cases = readFile(Dir + "/mlp.cases.bin");
  const size_t N = 200;
  ASSERT_EQ(Cases.size(), N * 65 * sizeof(float));
  const float *Xs = reinterpret_cast<const float *>(Cases.data());
  const float *Ys = Xs + N * 64;
  float MaxDiff = 0;
  for (size_t I = 0; I < N; ++I) {
    std::memcpy((*R)->input<float>(0), Xs + I * 64, 64 * sizeof(float));
    auto Y = (*R)->evaluate<float>();
    ASSERT_TRUE(bool(Y)) << Y.error().toString();
    MaxDiff = std::max(MaxDiff, std::fabs(*Y - Ys[I]));
  }
  EXPECT_LE(MaxDiff, 1e-5f);
}

TEST_F(OnnxRunner, FromBytesSeveralInputsAndOutputsAndAnUnusedFeature) {
  std::string Bytes = readFile(Dir + "/two_io.onnx");
  ASSERT_EXPECTED(R, OnnxModelRunner::createFromBytes(
                         Bytes.data(), Bytes.size(),
                         {TensorSpec::of<int64_t>("a", {1, 3}),
                          TensorSpec::of<float>("b", {1, 3}),
                          TensorSpec::of<int64_t>("feature_the_model_ignores")},
                         {TensorSpec::of<int64_t>("best", {1, 1}),
                          TensorSpec::of<float>("sum", {1, 3})}));
  int64_t *A = (*R)->input<int64_t>(0);
  float *B = (*R)->input<float>(1);
  A[0] = 1, A[1] = 5, A[2] = 2;
  B[0] = 0.5f, B[1] = -4.0f, B[2] = 0.25f;
  *(*R)->input<int64_t>(2) = 77;
  auto Best = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(Best)) << Best.error().toString();
  EXPECT_EQ(*Best, 2); // 1.5, 1.0, 2.25
  auto Sum = (*R)->output<float>("sum");
  ASSERT_TRUE(bool(Sum));
  EXPECT_FLOAT_EQ((*Sum)[0], 1.5f);
  EXPECT_FLOAT_EQ((*Sum)[1], 1.0f);
  EXPECT_EQ(*(*R)->input<int64_t>(2), 77); // inputs are never reset
  // A compiler may skip computing the feature the model ignores.
  EXPECT_TRUE((*R)->readsInput(0));
  EXPECT_TRUE((*R)->readsInput(1));
  EXPECT_FALSE((*R)->readsInput(2));
  EXPECT_FALSE((*R)->readsInput(3));
}

TEST_F(OnnxRunner, BadInputsAreClearErrors) {
  auto Missing =
      OnnxModelRunner::createFromFile(Dir + "/nope.onnx", mlpIn(), mlpOut());
  ASSERT_FALSE(bool(Missing));
  EXPECT_NE(Missing.error().message().find("nope.onnx"), std::string::npos);

  std::string Garbage(1000, '\x7f');
  auto Corrupt = OnnxModelRunner::createFromBytes(
      Garbage.data(), Garbage.size(), mlpIn(), mlpOut());
  ASSERT_FALSE(bool(Corrupt));
  EXPECT_NE(Corrupt.error().message().find("cannot load ONNX model"),
            std::string::npos);

  auto Unknown = OnnxModelRunner::createFromFile(
      Dir + "/mlp.onnx", {TensorSpec::of<float>("features", {1, 64})},
      mlpOut());
  ASSERT_FALSE(bool(Unknown));
  EXPECT_NE(Unknown.error().message().find("needs input 'x'"),
            std::string::npos);

  auto WrongType = OnnxModelRunner::createFromFile(
      Dir + "/mlp.onnx", {TensorSpec::of<double>("x", {1, 64})}, mlpOut());
  ASSERT_FALSE(bool(WrongType));
  EXPECT_EQ(WrongType.error().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(WrongType.error().message().find("'x'"), std::string::npos);

  auto WrongShape = OnnxModelRunner::createFromFile(
      Dir + "/mlp.onnx", {TensorSpec::of<float>("x", {1, 32})}, mlpOut());
  ASSERT_FALSE(bool(WrongShape));
  EXPECT_EQ(WrongShape.error().code(), ErrorCode::TypeMismatch);

  auto NoSuchOutput = OnnxModelRunner::createFromFile(
      Dir + "/mlp.onnx", mlpIn(), {TensorSpec::of<float>("advice")});
  ASSERT_FALSE(bool(NoSuchOutput));
  EXPECT_NE(NoSuchOutput.error().message().find("no output 'advice'"),
            std::string::npos);
}

namespace {
/// The onnx runner of \p Config over the two_io model's specs.
Expected<std::unique_ptr<ModelRunner>> twoIo(const std::string &Config) {
  RunnerFactories F = RunnerFactories::core();
  addOnnxRunners(F);
  auto C = RunnerConfig::parse(Config);
  if (!C)
    return C.takeError();
  return createRunner(*C,
                      {TensorSpec::of<int64_t>("a", {1, 3}),
                       TensorSpec::of<float>("b", {1, 3}),
                       TensorSpec::of<int64_t>("feature_the_model_ignores")},
                      {TensorSpec::of<int64_t>("best", {1, 1})}, F);
}
} // namespace

TEST_F(OnnxRunner, LazyAndEagerLoadingGiveTheSameRunner) {
  for (const char *Load : {"", ",load=eager"}) {
    ASSERT_EXPECTED(R, twoIo("onnx:" + Dir + "/two_io.onnx" + Load));
    // Known before ONNX Runtime is loaded, from the model file itself.
    EXPECT_TRUE((*R)->readsInput(0));
    EXPECT_TRUE((*R)->readsInput(1));
    EXPECT_FALSE((*R)->readsInput(2));
    for (int Round = 0; Round < 3; ++Round) {
      int64_t *A = (*R)->input<int64_t>(0);
      float *B = (*R)->input<float>(1);
      A[0] = 1, A[1] = 5, A[2] = 2 + Round;
      B[0] = 0.5f, B[1] = -4.0f, B[2] = 0.25f;
      auto Best = (*R)->evaluate<int64_t>();
      ASSERT_TRUE(bool(Best)) << Load << ": " << Best.error().toString();
      EXPECT_EQ(*Best, 2);
      A[0] = 9;
      EXPECT_EQ(*(*R)->evaluate<int64_t>(), 0) << Load;
    }
  }
}

TEST_F(OnnxRunner, LazyLoadingStillRefusesAModelOfOtherSpecsAtCreation) {
  auto Missing = twoIo("onnx:" + Dir + "/nope.onnx");
  ASSERT_FALSE(bool(Missing));
  EXPECT_NE(Missing.error().message().find("nope.onnx"), std::string::npos);
  auto Other = twoIo("onnx:" + Dir + "/mlp.onnx");
  ASSERT_FALSE(bool(Other));
  EXPECT_NE(Other.error().message().find("needs input 'x'"), std::string::npos);
}

TEST_F(OnnxRunner, WhatOnlyOnnxRuntimeFindsFailsTheFirstEvaluation) {
  // Of the right interface, but of an operator no ONNX opset has.
  OnnxGraphParts G;
  G.Nodes = {onnxNode("NoSuchOp", {"a"}, {"best"})};
  G.Inputs = {onnxTensorValue("a", 7, {1, 3})};
  G.Outputs = {onnxTensorValue("best", 7, {1, 1})};
  std::string Path = Dir + "/no_such_op.onnx";
  {
    std::ofstream F(Path, std::ios::binary);
    F << onnxModel(G);
  }
  auto Eager = twoIo("onnx:" + Path + ",load=eager");
  ASSERT_FALSE(bool(Eager));
  EXPECT_NE(Eager.error().message().find("NoSuchOp"), std::string::npos);

  ASSERT_EXPECTED(R, twoIo("onnx:" + Path));
  EXPECT_FALSE((*R)->readsInput(1));
  Error First = (*R)->evaluate();
  ASSERT_TRUE(bool(First));
  EXPECT_EQ(First.code(), Eager.error().code());
  EXPECT_NE(First.message().find("NoSuchOp"), std::string::npos);
  EXPECT_NE(First.message().find(Path), std::string::npos);
  // Not tried again: later evaluations fail fast, naming the first error.
  Error Second = (*R)->evaluate();
  ASSERT_TRUE(bool(Second));
  EXPECT_EQ(Second.code(), ErrorCode::Broken);
  EXPECT_NE(Second.message().find("NoSuchOp"), std::string::npos);
}

TEST_F(OnnxRunner, AModelReplacedBeforeTheFirstEvaluationIsRefused) {
  // Both models are of the specs; the second reads the input the first does
  // not, which the caller was told it need not fill.
  auto Echo = [](const char *In) {
    OnnxGraphParts G;
    G.Nodes = {onnxNode("Identity", {In}, {"w"})};
    G.Inputs = {onnxTensorValue(In, 7, {1})};
    G.Outputs = {onnxTensorValue("w", 7, {1})};
    return onnxModel(G);
  };
  std::string Path = Dir + "/replaced.onnx";
  auto Write = [&](const std::string &Bytes) {
    std::ofstream F(Path, std::ios::binary | std::ios::trunc);
    F << Bytes;
  };
  RunnerFactories F = RunnerFactories::core();
  addOnnxRunners(F);
  Write(Echo("u"));
  ASSERT_EXPECTED(R, createRunner(*RunnerConfig::parse("onnx:" + Path),
                                  {TensorSpec::of<int64_t>("u"),
                                   TensorSpec::of<int64_t>("v")},
                                  {TensorSpec::of<int64_t>("w")}, F));
  EXPECT_TRUE((*R)->readsInput(0));
  EXPECT_FALSE((*R)->readsInput(1));
  Write(Echo("v"));
  *(*R)->input<int64_t>(0) = 5;
  Error E = (*R)->evaluate();
  ASSERT_TRUE(bool(E)) << "an answer from an input nobody filled";
  EXPECT_NE(E.message().find("reads other inputs"), std::string::npos);
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
}

TEST_F(OnnxRunner, MetadataIsKnownBeforeLoadingAndMustStayTheSame) {
  OnnxGraphParts G;
  G.Nodes = {onnxNode("Identity", {"u"}, {"w"})};
  G.Inputs = {onnxTensorValue("u", 7, {1})};
  G.Outputs = {onnxTensorValue("w", 7, {1})};
  std::string Path = Dir + "/metadata.onnx";
  auto Write = [&](const std::string &Value) {
    std::ofstream F(Path, std::ios::binary | std::ios::trunc);
    F << onnxModel(G) << onnxMetadataEntry("mlbridge.claim", Value);
  };
  RunnerFactories F = RunnerFactories::core();
  addOnnxRunners(F);
  for (const char *Load : {",load=eager", ""}) {
    Write("first");
    ASSERT_EXPECTED(R, createRunner(*RunnerConfig::parse("onnx:" + Path + Load),
                                    {TensorSpec::of<int64_t>("u")},
                                    {TensorSpec::of<int64_t>("w")}, F));
    EXPECT_EQ((*R)->metadata("mlbridge.claim"), "first") << Load;
    EXPECT_FALSE((*R)->metadata("mlbridge.other"));
    // What the caller acted on must still hold when the model is loaded.
    Write("second");
    *(*R)->input<int64_t>(0) = 3;
    Error E = (*R)->evaluate();
    if (*Load) {
      EXPECT_FALSE(bool(E)) << "an eager runner has loaded its model";
    } else {
      ASSERT_TRUE(bool(E)) << "a lazy runner loaded a model saying otherwise";
      EXPECT_NE(E.message().find("other metadata"), std::string::npos);
    }
  }
}

namespace {
/// Policies exported from PyTorch by tools/export_torch_test_models.py under
/// the system Python (Debian's python3-torch), with torch's outputs.
std::string torchModelDir() {
  static const std::string Dir = [] {
    std::string D = ::testing::TempDir() + "/mlbridge-torch-models";
    std::string Cmd = std::string("/usr/bin/python3 ") + MLBRIDGE_SOURCE_DIR +
                      "/tools/export_torch_test_models.py " + D +
                      " > /dev/null 2>&1";
    return std::system(Cmd.c_str()) == 0 ? D : std::string();
  }();
  return Dir;
}

/// Max abs difference between the runner and torch over every stored case.
float maxTorchDifference(const std::string &Name, int64_t In, int64_t Out) {
  auto R =
      OnnxModelRunner::createFromFile(torchModelDir() + "/" + Name + ".onnx",
                                      {TensorSpec::of<float>("x", {1, In})},
                                      {TensorSpec::of<float>("y", {1, Out})});
  EXPECT_TRUE(bool(R)) << R.error().toString();
  if (!R)
    return 1e9f;
  std::string Cases = readFile(torchModelDir() + "/" + Name + ".cases.bin");
  const size_t N = 200;
  EXPECT_EQ(Cases.size(), N * size_t(In + Out) * sizeof(float));
  const float *Xs = reinterpret_cast<const float *>(Cases.data());
  const float *Ys = Xs + N * In;
  float MaxDiff = 0;
  for (size_t I = 0; I < N; ++I) {
    std::memcpy((*R)->input<float>(0), Xs + I * In, In * sizeof(float));
    EXPECT_FALSE((*R)->evaluate());
    auto Y = (*R)->output<float>(0);
    for (int64_t K = 0; K < Out; ++K)
      MaxDiff = std::max(MaxDiff, std::fabs((*Y)[K] - Ys[I * Out + K]));
  }
  return MaxDiff;
}
} // namespace

TEST(OnnxRunnerTorch, PoliciesExportedFromPyTorchMatchTorch) {
  if (torchModelDir().empty())
    GTEST_SKIP() << "no PyTorch under /usr/bin/python3 (python3-torch)";
  EXPECT_LE(maxTorchDifference("torch_mlp", 64, 1), 1e-5f);
  EXPECT_LE(maxTorchDifference("torch_policy", 300, 16), 1e-5f);
}

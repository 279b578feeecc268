//===- TorchRunnerTest.cpp - In-process LibTorch runner -------------------===//
//
// TorchScript models from tools/export_torch_test_models.py (a Python with
// torch, at configure time): PyTorch's own outputs for 200 inputs are the
// reference, within 1e-5; then what forward() may take and return, and
// every way a model can be refused or fail.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/RunnerConfig.h"
#include "mlbridge/TorchModelRunner.h"

#include "TestHelpers.h"

#include <cmath>
#include <cstring>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
std::string model(const std::string &Name) {
  return std::string(MLBRIDGE_TORCH_MODEL_DIR) + "/" + Name;
}

std::vector<TensorSpec> x4() { return {TensorSpec::of<float>("x", {1, 4})}; }

/// Runs \p R over NAME.cases.bin (each input's cases back to back, then
/// PyTorch's float32 outputs) and returns the largest difference.
double largestDifference(ModelRunner &R, const std::string &Name) {
  std::string Bytes = readFile(model(Name + ".cases.bin"));
  const size_t Cases = 200;
  size_t InBytes = 0;
  for (size_t I = 0; I < R.numInputs(); ++I)
    InBytes += R.inputSpec(I).byteSize();
  const size_t OutCount = R.outputSpec(0).elementCount();
  EXPECT_EQ(Bytes.size(), Cases * (InBytes + OutCount * sizeof(float)));
  const float *Expected =
      reinterpret_cast<const float *>(Bytes.data() + Cases * InBytes);
  double MaxDiff = 0;
  for (size_t C = 0; C < Cases; ++C) {
    size_t Offset = 0;
    for (size_t I = 0; I < R.numInputs(); ++I) {
      size_t N = R.inputSpec(I).byteSize();
      std::memcpy(R.inputData(I), Bytes.data() + Offset + C * N, N);
      Offset += Cases * N;
    }
    if (Error E = R.evaluate()) {
      ADD_FAILURE() << E.toString();
      return 1e9;
    }
    auto Y = *R.output<float>(0);
    for (size_t E = 0; E < OutCount; ++E)
      MaxDiff =
          std::max(MaxDiff, std::fabs(double(Y[E]) -
                                      double(Expected[C * OutCount + E])));
  }
  return MaxDiff;
}

/// The message of the error creating a runner of \p Name with these specs.
std::string refusal(const std::string &Name, std::vector<TensorSpec> In,
                    std::vector<TensorSpec> Out) {
  auto R = TorchModelRunner::createFromFile(model(Name), std::move(In),
                                            std::move(Out));
  return R ? std::string("(created)") : R.error().message();
}
} // namespace

TEST(TorchRunner, PoliciesMatchPyTorch) {
  ASSERT_EXPECTED(Mlp, TorchModelRunner::createFromFile(
                           model("torch_mlp.pt"),
                           {TensorSpec::of<float>("x", {1, 64})},
                           {TensorSpec::of<float>("y", {1, 1})}));
  EXPECT_LE(largestDifference(**Mlp, "torch_mlp"), 1e-5);
  ASSERT_EXPECTED(Policy, TorchModelRunner::createFromFile(
                              model("torch_policy.pt"),
                              {TensorSpec::of<float>("x", {1, 300})},
                              {TensorSpec::of<float>("y", {1, 16})}));
  EXPECT_LE(largestDifference(**Policy, "torch_policy"), 1e-5);
  // Two inputs, bound by name whatever the spec order; one of another dtype.
  ASSERT_EXPECTED(Embed, TorchModelRunner::createFromFile(
                             model("torch_embed_policy.pt"),
                             {TensorSpec::of<float>("x", {1, 16}),
                              TensorSpec::of<int64_t>("opcode", {1})},
                             {TensorSpec::of<float>("y", {1, 8})}));
  EXPECT_LE(largestDifference(**Embed, "torch_embed_policy"), 1e-5);
}

TEST(TorchRunner, InputsTheModelDoesNotTakeStillHaveBuffers) {
  ASSERT_EXPECTED(R, TorchModelRunner::createFromFile(
                         model("torch_mlp.pt"),
                         {TensorSpec::of<int64_t>("unused", {1}),
                          TensorSpec::of<float>("x", {1, 64})},
                         {TensorSpec::of<float>("y", {1, 1})}));
  EXPECT_FALSE((*R)->readsInput(0));
  EXPECT_TRUE((*R)->readsInput(1));
  ASSERT_NE((*R)->input<int64_t>(0), nullptr);
  EXPECT_FALSE((*R)->evaluate());
}

TEST(TorchRunner, TuplesAreOutputsInOrderAndDictsByName) {
  ASSERT_EXPECTED(T, TorchModelRunner::createFromFile(
                         model("torch_tuple.pt"), x4(),
                         {TensorSpec::of<float>("sum", {1}),
                          TensorSpec::of<int64_t>("twice", {1, 4})}));
  float *X = (*T)->input<float>(0);
  for (int I = 0; I < 4; ++I)
    X[I] = float(I + 1);
  ASSERT_FALSE((*T)->evaluate());
  EXPECT_EQ((*(*T)->output<float>(0))[0], 10.0f);
  EXPECT_EQ((*(*T)->output<int64_t>(1))[3], 8);

  ASSERT_EXPECTED(D, TorchModelRunner::createFromFile(
                         model("torch_dict.pt"), x4(),
                         {TensorSpec::of<int64_t>("best", {1}),
                          TensorSpec::of<float>("twice", {4})}));
  X = (*D)->input<float>(0);
  for (int I = 0; I < 4; ++I)
    X[I] = float(I == 2 ? 9 : I);
  ASSERT_FALSE((*D)->evaluate());
  EXPECT_EQ((*(*D)->output<int64_t>("best"))[0], 2);
  EXPECT_EQ((*(*D)->output<float>("twice"))[2], 18.0f);
}

TEST(TorchRunner, ModelsThatDoNotFitTheSpecsAreRefusedNamingWhy) {
  EXPECT_NE(refusal("missing.pt", x4(), {TensorSpec::of<float>("y", {1})})
                .find("is not a file"),
            std::string::npos);
  // A file that is not TorchScript.
  EXPECT_NE(refusal("torch_mlp.onnx", {TensorSpec::of<float>("x", {1, 64})},
                    {TensorSpec::of<float>("y", {1, 1})})
                .find("cannot use TorchScript model"),
            std::string::npos);
  EXPECT_NE(refusal("torch_mlp.pt", {TensorSpec::of<float>("z", {1, 64})},
                    {TensorSpec::of<float>("y", {1, 1})})
                .find("takes 'x', which no input spec provides"),
            std::string::npos);
  EXPECT_NE(refusal("torch_mlp.pt", {TensorSpec::of<float>("x", {1, 64})},
                    {TensorSpec::of<int64_t>("y", {1, 1})})
                .find("has dtype Float, the spec says int64_t"),
            std::string::npos);
  EXPECT_NE(refusal("torch_mlp.pt", {TensorSpec::of<float>("x", {1, 64})},
                    {TensorSpec::of<float>("y", {1, 2})})
                .find("has 1 elements, the spec has 2"),
            std::string::npos);
  // Input shapes the model cannot take fail its trial run.
  EXPECT_NE(refusal("torch_mlp.pt", {TensorSpec::of<float>("x", {1, 63})},
                    {TensorSpec::of<float>("y", {1, 1})})
                .find("cannot use TorchScript model"),
            std::string::npos);
  EXPECT_NE(refusal("torch_mlp.pt", {TensorSpec::of<float>("x", {1, 64})},
                    {TensorSpec::of<float>("y", {1, 1}),
                     TensorSpec::of<float>("z", {1})})
                .find("returns one tensor, the specs name 2"),
            std::string::npos);
  EXPECT_NE(refusal("torch_tuple.pt", x4(), {TensorSpec::of<float>("s", {1})})
                .find("returned 2 tensors, the specs name 1"),
            std::string::npos);
  EXPECT_NE(refusal("torch_dict.pt", x4(), {TensorSpec::of<float>("nope", {4})})
                .find("returned no 'nope'"),
            std::string::npos);
  EXPECT_NE(refusal("torch_int_arg.pt",
                    {TensorSpec::of<float>("x", {1, 4}),
                     TensorSpec::of<int64_t>("k", {1})},
                    {TensorSpec::of<float>("y", {1, 4})})
                .find("argument 'k' is a int, not a Tensor"),
            std::string::npos);
  EXPECT_NE(
      refusal("torch_returns_int.pt", x4(), {TensorSpec::of<int64_t>("y", {1})})
          .find("returns a Int, not tensors"),
      std::string::npos);
  EXPECT_NE(refusal("torch_mlp.pt", {TensorSpec::of<uint32_t>("x", {1, 64})},
                    {TensorSpec::of<float>("y", {1, 1})})
                .find("LibTorch has no uint32_t dtype"),
            std::string::npos);
}

TEST(TorchRunner, AModelThatFailsIsAnErrorAndTheRunnerGoesOn) {
  ASSERT_EXPECTED(
      R, TorchModelRunner::createFromFile(model("torch_fails.pt"), x4(),
                                          {TensorSpec::of<float>("y", {1})}));
  float *X = (*R)->input<float>(0);
  X[1] = -1;
  Error E = (*R)->evaluate();
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::ModelFailure);
  EXPECT_NE(E.message().find("negative feature"), std::string::npos)
      << E.message();
  X[1] = 2;
  X[3] = 3;
  auto Y = (*R)->evaluate<float>();
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 5.0f);
}

TEST(TorchRunner, CreateRunnerMakesTheTorchKind) {
  RunnerFactories F = RunnerFactories::core();
  auto Without =
      createRunner(*RunnerConfig::parse("torch:" + model("torch_mlp.pt")),
                   {TensorSpec::of<float>("x", {1, 64})},
                   {TensorSpec::of<float>("y", {1, 1})}, F);
  ASSERT_FALSE(bool(Without));
  EXPECT_NE(Without.error().message().find("addTorchRunners"),
            std::string::npos);
  addTorchRunners(F);
  auto With = createRunner(
      *RunnerConfig::parse("torch:" + model("torch_mlp.pt") + ",threads=1"),
      {TensorSpec::of<float>("x", {1, 64})},
      {TensorSpec::of<float>("y", {1, 1})}, F);
  ASSERT_TRUE(bool(With)) << With.error().toString();
  EXPECT_EQ(largestDifference(**With, "torch_mlp") <= 1e-5, true);
}

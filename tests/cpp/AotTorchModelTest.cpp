//===- AotTorchModelTest.cpp - PyTorch policies compiled ahead of time ----===//
//
// Policies exported from PyTorch (tools/export_torch_test_models.py) and
// compiled by mlbridge-aot: against ONNX Runtime on 1000 random inputs, and
// against PyTorch's own outputs for 200 inputs (within 1e-5).
//
//===----------------------------------------------------------------------===//

#include "AotCompare.h"
#include "TestHelpers.h"

#include "TorchEmbedPolicy.h"
#include "TorchMlp.h"
#include "TorchPolicy.h"

#include <cstring>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
std::string torchPath(const std::string &File) {
  return std::string(MLBRIDGE_AOT_MODEL_DIR) + "/torch/" + File;
}

/// Checks the model against torch's outputs stored in NAME.cases.bin: the
/// inputs (each input's cases back to back) then the float32 outputs.
template <class Model> void compareWithTorch(const std::string &Name) {
  std::string Bytes = readFile(torchPath(Name + ".cases.bin"));
  auto R = AotModelRunner<Model>::create();
  ASSERT_TRUE(R) << R.error().message();
  const size_t Cases = 200;
  size_t InBytes = 0;
  for (size_t I = 0; I < (*R)->numInputs(); ++I)
    InBytes += (*R)->inputSpec(I).byteSize();
  size_t OutCount = (*R)->outputSpec(0).elementCount();
  ASSERT_EQ(Bytes.size(), Cases * (InBytes + OutCount * sizeof(float)));
  const float *Expected =
      reinterpret_cast<const float *>(Bytes.data() + Cases * InBytes);
  double MaxDiff = 0;
  for (size_t C = 0; C < Cases; ++C) {
    size_t Offset = 0;
    for (size_t I = 0; I < (*R)->numInputs(); ++I) {
      size_t N = (*R)->inputSpec(I).byteSize();
      std::memcpy((*R)->inputData(I), Bytes.data() + Offset + C * N, N);
      Offset += Cases * N;
    }
    ASSERT_FALSE((*R)->evaluate());
    auto Y = *(*R)->template output<float>(0);
    for (size_t E = 0; E < OutCount; ++E) {
      double D = std::fabs(double(Y[E]) - double(Expected[C * OutCount + E]));
      MaxDiff = std::max(MaxDiff, D);
      ASSERT_LE(D, 1e-5) << Name << " case " << C << " output " << E;
    }
  }
  ::testing::Test::RecordProperty("max_abs_difference_vs_torch",
                                  std::to_string(MaxDiff));
}
} // namespace

TEST(AotTorchModel, MlpMatchesOnnxRuntime) {
  compareWithOnnxRuntime<aot_test::TorchMlp>(torchPath("torch_mlp.onnx"),
                                             InputRanges{-3.0f, 3.0f});
}

TEST(AotTorchModel, PolicyMatchesOnnxRuntime) {
  compareWithOnnxRuntime<aot_test::TorchPolicy>(torchPath("torch_policy.onnx"),
                                                InputRanges{-3.0f, 3.0f});
}

TEST(AotTorchModel, EmbeddingPolicyMatchesOnnxRuntime) {
  compareWithOnnxRuntime<aot_test::TorchEmbedPolicy>(
      torchPath("torch_embed_policy.onnx"), InputRanges{-3.0f, 3.0f, 0, 11});
}

TEST(AotTorchModel, MlpMatchesTorch) {
  compareWithTorch<aot_test::TorchMlp>("torch_mlp");
}

TEST(AotTorchModel, PolicyMatchesTorch) {
  compareWithTorch<aot_test::TorchPolicy>("torch_policy");
}

TEST(AotTorchModel, EmbeddingPolicyMatchesTorch) {
  compareWithTorch<aot_test::TorchEmbedPolicy>("torch_embed_policy");
}

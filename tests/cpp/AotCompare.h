//===- AotCompare.h - AOT model against ONNX Runtime ------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// compareWithOnnxRuntime<Model>(): feeds the same random inputs to an
/// AotModelRunner<Model> and to an OnnxModelRunner over the model's ONNX file
/// and checks every output: float32 within 1e-5 (absolute), int64 equal.
/// compareWithReference<Model>() does the same against stored inputs and
/// outputs (for operators ONNX Runtime has no kernel for).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TESTS_AOTCOMPARE_H
#define MLBRIDGE_TESTS_AOTCOMPARE_H

#include "mlbridge/AotModelRunner.h"
#include "mlbridge/OnnxModelRunner.h"

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

namespace mlbridge::test {

/// Ranges random inputs are drawn from.
struct InputRanges {
  /// float32 inputs: uniform in [FloatLo, FloatHi].
  float FloatLo = -1.0f, FloatHi = 1.0f;
  /// int64 inputs: uniform in [IntLo, IntHi].
  int64_t IntLo = 0, IntHi = 9;
};

/// Largest absolute float32 difference seen by the last comparison.
inline double &lastMaxDifference() {
  static double D = 0;
  return D;
}

/// Fills input \p I of both runners with the same random values.
inline void fillRandomInput(ModelRunner &A, ModelRunner &B, size_t I,
                            const InputRanges &R, std::mt19937_64 &Rng) {
  const TensorSpec &S = A.inputSpec(I);
  if (S.isElementType<float>()) {
    std::uniform_real_distribution<float> D(R.FloatLo, R.FloatHi);
    for (size_t E = 0; E < S.elementCount(); ++E)
      A.input<float>(I)[E] = B.input<float>(I)[E] = D(Rng);
  } else {
    std::uniform_int_distribution<int64_t> D(R.IntLo, R.IntHi);
    for (size_t E = 0; E < S.elementCount(); ++E)
      A.input<int64_t>(I)[E] = B.input<int64_t>(I)[E] = D(Rng);
  }
}

/// Runs \p Cases random inputs through the AOT model and ONNX Runtime.
template <class Model>
void compareWithOnnxRuntime(const std::string &OnnxPath, InputRanges Ranges,
                            int Cases = 1000) {
  auto Aot = AotModelRunner<Model>::create();
  ASSERT_TRUE(Aot) << Aot.error().message();
  std::vector<TensorSpec> In, Out;
  for (size_t I = 0; I < (*Aot)->numInputs(); ++I)
    In.push_back((*Aot)->inputSpec(I));
  for (size_t I = 0; I < (*Aot)->numOutputs(); ++I)
    Out.push_back((*Aot)->outputSpec(I));
  auto Ort = OnnxModelRunner::createFromFile(OnnxPath, In, Out);
  ASSERT_TRUE(Ort) << Ort.error().message();
  std::mt19937_64 Rng(42);
  double MaxDiff = 0;
  for (int C = 0; C < Cases; ++C) {
    for (size_t I = 0; I < In.size(); ++I)
      fillRandomInput(**Aot, **Ort, I, Ranges, Rng);
    Error EA = (*Aot)->evaluate();
    ASSERT_FALSE(EA) << EA.message();
    Error EO = (*Ort)->evaluate();
    ASSERT_FALSE(EO) << EO.message();
    for (size_t O = 0; O < Out.size(); ++O) {
      const std::string &Name = Out[O].name();
      if (Out[O].isElementType<float>()) {
        auto A = *(*Aot)->template output<float>(O);
        auto B = *(*Ort)->template output<float>(O);
        for (size_t E = 0; E < A.Size; ++E) {
          if (std::isnan(B[E])) {
            ASSERT_TRUE(std::isnan(A[E])) << Name << "[" << E << "]";
            continue;
          }
          double D = std::fabs(double(A[E]) - double(B[E]));
          MaxDiff = std::max(MaxDiff, D);
          ASSERT_LE(D, 1e-5) << "output " << Name << "[" << E << "], case " << C
                             << ": aot " << A[E] << " vs ort " << B[E];
        }
      } else {
        auto A = *(*Aot)->template output<int64_t>(O);
        auto B = *(*Ort)->template output<int64_t>(O);
        for (size_t E = 0; E < A.Size; ++E)
          ASSERT_EQ(A[E], B[E])
              << "output " << Name << "[" << E << "], case " << C;
      }
    }
  }
  lastMaxDifference() = MaxDiff;
  ::testing::Test::RecordProperty("max_abs_difference",
                                  std::to_string(MaxDiff));
}

/// Checks output \p O of \p R against \p Expected (its raw bytes).
inline void expectOutputNear(const ModelRunner &R, size_t O,
                             const void *Expected, size_t Case) {
  const TensorSpec &S = R.outputSpec(O);
  if (S.isElementType<float>()) {
    auto A = *R.output<float>(O);
    const float *B = static_cast<const float *>(Expected);
    for (size_t E = 0; E < A.Size; ++E)
      ASSERT_LE(std::fabs(double(A[E]) - double(B[E])), 1e-5)
          << S.name() << "[" << E << "], case " << Case;
  } else {
    auto A = *R.output<int64_t>(O);
    const int64_t *B = static_cast<const int64_t *>(Expected);
    for (size_t E = 0; E < A.Size; ++E)
      ASSERT_EQ(A[E], B[E]) << S.name() << "[" << E << "], case " << Case;
  }
}

/// Replays \p CasesPath (case after case: each input's bytes, then each
/// output's bytes) through AotModelRunner<Model>.
template <class Model> void compareWithReference(const std::string &CasesPath) {
  auto R = AotModelRunner<Model>::create();
  ASSERT_TRUE(R) << R.error().message();
  std::string Bytes = readFile(CasesPath);
  size_t CaseBytes = 0;
  for (size_t I = 0; I < (*R)->numInputs(); ++I)
    CaseBytes += (*R)->inputSpec(I).byteSize();
  for (size_t O = 0; O < (*R)->numOutputs(); ++O)
    CaseBytes += (*R)->outputSpec(O).byteSize();
  ASSERT_GT(CaseBytes, 0u);
  ASSERT_EQ(Bytes.size() % CaseBytes, 0u);
  ASSERT_GE(Bytes.size() / CaseBytes, 1000u);
  const char *P = Bytes.data();
  for (size_t C = 0; C < Bytes.size() / CaseBytes; ++C) {
    for (size_t I = 0; I < (*R)->numInputs(); ++I) {
      std::memcpy((*R)->inputData(I), P, (*R)->inputSpec(I).byteSize());
      P += (*R)->inputSpec(I).byteSize();
    }
    Error E = (*R)->evaluate();
    ASSERT_FALSE(E) << E.message();
    for (size_t O = 0; O < (*R)->numOutputs(); ++O) {
      expectOutputNear(**R, O, P, C);
      P += (*R)->outputSpec(O).byteSize();
    }
  }
}

} // namespace mlbridge::test

#endif // MLBRIDGE_TESTS_AOTCOMPARE_H

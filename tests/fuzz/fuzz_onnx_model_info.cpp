//===- fuzz_onnx_model_info.cpp - Fuzz readOnnxModelInfo ------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// readOnnxModelInfo (src/core/OnnxModelInfo.cpp, support/ProtoWire.h under
// it): the onnx runner reads untrusted model files with it before ONNX
// Runtime sees them. A model that parses must accept the specs its own
// interface describes (checkOnnxInterface, every input read), and refuse
// specs of another element type; and reading it must never hold more memory
// than the documented budget (OnnxModelInfoMemoryFactor per byte of the
// model plus OnnxModelInfoMemoryBase; this target's operator new counts the
// bytes live while the reader runs, libFuzzer's -rss_limit_mb bounds the
// rest). Seeds: tests/fuzz/corpus/fuzz_onnx_model_info.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "mlbridge/OnnxModelInfo.h"

#include <algorithm>
#include <cstdlib>
#include <malloc.h>
#include <new>
#include <optional>

using namespace mlbridge;

namespace {
/// Bytes allocated through operator new and not yet freed while Counting,
/// and their peak.
bool Counting = false;
long long Live = 0, Peak = 0;
} // namespace

namespace {
void *allocate(size_t N) noexcept {
  void *P = std::malloc(N ? N : 1);
  if (P && Counting) {
    Live += (long long)malloc_usable_size(P);
    Peak = std::max(Peak, Live);
  }
  return P;
}
void release(void *P) noexcept {
  if (P && Counting)
    Live -= (long long)malloc_usable_size(P);
  std::free(P);
}
} // namespace

// Every form of new and delete that pairs with malloc/free (libFuzzer's own
// nothrow allocations included: ASan checks that they are paired).
void *operator new(size_t N) {
  if (void *P = allocate(N))
    return P;
  throw std::bad_alloc();
}
void *operator new[](size_t N) { return operator new(N); }
void *operator new(size_t N, const std::nothrow_t &) noexcept {
  return allocate(N);
}
void *operator new[](size_t N, const std::nothrow_t &) noexcept {
  return allocate(N);
}
void operator delete(void *P) noexcept { release(P); }
void operator delete[](void *P) noexcept { release(P); }
void operator delete(void *P, size_t) noexcept { release(P); }
void operator delete[](void *P, size_t) noexcept { release(P); }
void operator delete(void *P, const std::nothrow_t &) noexcept { release(P); }
void operator delete[](void *P, const std::nothrow_t &) noexcept { release(P); }

namespace {
/// The DType of an ONNX element type, if mlbridge has one.
std::optional<DType> dtypeOf(int32_t ElementType) {
  for (int I = 0; I < NumDTypes; ++I)
    if (onnxElementType(DType(I)) == ElementType)
      return DType(I);
  return std::nullopt;
}

/// A spec for \p V (unknown dimensions taken as 1), if it can have one.
std::optional<TensorSpec> specOf(const OnnxValueInfo &V) {
  auto Type = dtypeOf(V.ElementType);
  if (!V.IsTensor || !Type || V.Dims.size() > 8)
    return std::nullopt;
  std::vector<int64_t> Shape;
  for (int64_t D : V.Dims)
    Shape.push_back(D < 0 ? 1 : D);
  auto S = TensorSpec::create(V.Name, *Type, Shape);
  if (!S)
    return std::nullopt;
  return *S;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  Live = Peak = 0;
  Counting = true;
  auto Info = readOnnxModelInfo(fuzz::asView(Data, Size));
  Counting = false;
  // The budget charges what it allocates; strings add their terminators,
  // errors their messages.
  long long Budget = (long long)((OnnxModelInfoMemoryFactor + 1) * Size +
                                 OnnxModelInfoMemoryBase + 65536);
  if (Peak > Budget)
    fuzz::die("the model's interface took more memory than its budget",
              makeError(ErrorCode::TooLarge, std::to_string(Peak), " > ",
                        std::to_string(Budget)));
  if (!Info)
    return 0;
  std::vector<TensorSpec> Inputs, Outputs;
  for (const OnnxValueInfo &V : Info->Inputs) {
    auto S = specOf(V);
    if (!S)
      return 0;
    for (const TensorSpec &Seen : Inputs)
      if (Seen.name() == S->name())
        return 0; // duplicate names: which one is checked is unspecified
    Inputs.push_back(*S);
  }
  for (const OnnxValueInfo &V : Info->Outputs)
    if (auto S = specOf(V)) {
      for (const OnnxValueInfo &Other : Info->Outputs)
        if (&Other != &V && Other.Name == V.Name)
          return 0;
      Outputs.push_back(*S);
    }
  auto Reads = checkOnnxInterface(*Info, Inputs, Outputs, "fuzzed");
  if (!Reads)
    fuzz::die("a model refuses the specs of its own interface",
              Reads.takeError());
  for (bool R : *Reads)
    if (!R)
      fuzz::die("an input of the model is not read",
                makeError(ErrorCode::Protocol, "readsInput"));
  if (!Outputs.empty()) {
    std::vector<TensorSpec> Wrong = Outputs;
    DType Other = Wrong[0].type() == DType::Float ? DType::Int64 : DType::Float;
    Wrong[0] = *TensorSpec::create(Wrong[0].name(), Other, Wrong[0].shape());
    if (checkOnnxInterface(*Info, Inputs, Wrong, "fuzzed"))
      fuzz::die("an output of another element type is accepted",
                makeError(ErrorCode::Protocol, Wrong[0].name()));
  }
  return 0;
}

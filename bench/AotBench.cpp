//===- AotBench.cpp - AOT-compiled models vs the ONNX Runtime runner ------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// evaluate() of AotModelRunner over models compiled by mlbridge-aot (a
// 64->64->1 MLP and a 300->256->256->16 policy), next to evaluate() of
// OnnxModelRunner on the same ONNX files, measured in the same run, rep by
// rep, pinned to CPU 0; also the generated class's bare Run() (the runner's
// own cost), C++ heap allocations per call, and the largest output
// difference between the two runners over the benchmark's inputs.
//
//   mlbridge-bench-aot [--calls N] [--reps R]
//
//===----------------------------------------------------------------------===//

#include "mlbridge/AotModelRunner.h"
#include "mlbridge/OnnxModelRunner.h"

#include "BenchMlp.h"
#include "BenchPolicy.h"
#include "BenchSupport.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace mlbridge;
using bench::Allocations;
using bench::median;
using bench::timeCalls;

namespace {

/// Measures one model; returns false on a setup error.
template <class Model>
bool measure(const char *Label, const char *File, int Calls, int Reps,
             bench::JsonReport &Report) {
  const auto &In = Model::argInfo(0);
  const auto &Out = Model::resultInfo(0);
  const int64_t N = int64_t(In.ElementCount), M = int64_t(Out.ElementCount);
  std::vector<TensorSpec> Inputs = {TensorSpec::of<float>("x", {1, N})};
  std::vector<TensorSpec> Outputs = {TensorSpec::of<float>("y", {1, M})};
  auto Ort = OnnxModelRunner::createFromFile(
      std::string(MLBRIDGE_BENCH_MODEL_DIR) + "/" + File, Inputs, Outputs);
  auto Aot = AotModelRunner<Model>::create(Inputs, Outputs);
  if (!Ort || !Aot) {
    std::fprintf(stderr, "%s\n",
                 (!Ort ? Ort.error() : Aot.error()).toString().c_str());
    return false;
  }
  Model Bare;
  float *OrtX = (*Ort)->input<float>(0),
        *AotX = (*Aot)->template input<float>(0);
  float *BareX = static_cast<float *>(Bare.arg_data(0));
  for (int64_t I = 0; I < N; ++I)
    OrtX[I] = AotX[I] = BareX[I] = std::sin(float(I)) * 0.5f;

  double MaxDiff = 0;
  auto OrtCall = [&](int I) {
    OrtX[I % N] = float(I % 13) * 0.1f;
    return !(*Ort)->evaluate();
  };
  auto AotCall = [&](int I) {
    AotX[I % N] = float(I % 13) * 0.1f;
    return !(*Aot)->evaluate();
  };
  auto BareCall = [&](int I) {
    BareX[I % N] = float(I % 13) * 0.1f;
    return Bare.Run();
  };
  // Same inputs through both runners: the outputs agree.
  for (int I = 0; I < 1000; ++I) {
    if (!OrtCall(I) || !AotCall(I))
      return false;
    auto A = *(*Aot)->template output<float>(0);
    auto B = *(*Ort)->output<float>(0);
    for (size_t E = 0; E < A.Size; ++E)
      MaxDiff = std::max(MaxDiff, std::fabs(double(A[E]) - double(B[E])));
  }
  uint64_t Before = Allocations.load();
  timeCalls(AotCall, 1000);
  double AotAllocs = double(Allocations.load() - Before) / 1000;
  Before = Allocations.load();
  timeCalls(OrtCall, 1000);
  double OrtAllocs = double(Allocations.load() - Before) / 1000;

  std::vector<double> OrtUs, AotUs, BareUs, Speedup;
  for (int Rep = 0; Rep < Reps; ++Rep) {
    OrtUs.push_back(timeCalls(OrtCall, Calls));
    AotUs.push_back(timeCalls(AotCall, Calls));
    BareUs.push_back(timeCalls(BareCall, Calls));
    Speedup.push_back(OrtUs.back() / AotUs.back());
  }
  // In the report, ratios are to ONNX Runtime (the baseline): aot / ort.
  std::vector<double> ToOrt;
  for (size_t I = 0; I < AotUs.size(); ++I)
    ToOrt.push_back(AotUs[I] / OrtUs[I]);
  Report.add({std::string(Label) + ": OnnxModelRunner", OrtUs, {}, OrtAllocs});
  Report.add(
      {std::string(Label) + ": AotModelRunner", AotUs, ToOrt, AotAllocs});
  Report.add({std::string(Label) + ": bare AOT class", BareUs, {}, -1});
  auto MM = std::minmax_element(Speedup.begin(), Speedup.end());
  std::printf("%-26s %9.3f %9.3f %9.3f %8.1fx [%.1f..%.1f] %8.2f/%-6.1f "
              "%9.1e  %s\n",
              Label, median(OrtUs), median(AotUs), median(BareUs),
              median(Speedup), *MM.first, *MM.second, AotAllocs, OrtAllocs,
              MaxDiff, Bare.instructionSet());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  bench::Options Opts{20000, 7, ""};
  if (!bench::parseOptions(argc, argv, Opts))
    return 2;
  const int Calls = Opts.Calls, Reps = Opts.Reps;
  bench::pinTo(0);
  std::printf("AOT-compiled model (AotModelRunner) vs ONNX Runtime "
              "(OnnxModelRunner, 1 thread), same run, %d reps x %d calls, "
              "CPU 0\n\n",
              Reps, Calls);
  std::printf("%-26s %9s %9s %9s %22s %15s %9s  %s\n", "model", "ort us",
              "aot us", "bare us", "ort/aot [min..max]", "allocs aot/ort",
              "max diff", "isa");
  bench::JsonReport Report("mlbridge-bench-aot");
  Report.note("regime", "pinned to CPU 0");
  Report.note("calls", Calls);
  Report.note("reps", Reps);
  Report.note("baseline", "OnnxModelRunner (ONNX Runtime, 1 thread)");
  bool Ok = measure<bench_models::BenchMlp>("MLP 64->64->1", "mlp.onnx", Calls,
                                            Reps, Report) &&
            measure<bench_models::BenchPolicy>(
                "policy 300->256->256->16", "policy.onnx", Calls, Reps, Report);
  if (Ok && !Opts.JsonPath.empty())
    Ok = Report.write(Opts.JsonPath);
  return Ok ? 0 : 1;
}

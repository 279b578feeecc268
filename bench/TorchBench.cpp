//===- TorchBench.cpp - TorchModelRunner vs raw LibTorch forward() --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// evaluate() of TorchModelRunner on PyTorch's 64->64->1 MLP and
// 300->256->256->16 policy (tools/export_torch_test_models.py, TorchScript),
// next to raw LibTorch: Module::forward() on a preallocated input tensor in
// inference mode, its result read as the runner reads it; and the same
// models exported to ONNX, run by OnnxModelRunner and compiled ahead of time
// (AotModelRunner); all measured in the same run, rep by rep, as ratios to
// raw forward(), with the C++ heap allocations per call. Pinned to CPU 0,
// one intra-op thread everywhere.
//
//   mlbridge-bench-torch [--calls N] [--reps R] [--json FILE]
//
//===----------------------------------------------------------------------===//

#include "mlbridge/AotModelRunner.h"
#include "mlbridge/OnnxModelRunner.h"
#include "mlbridge/TorchModelRunner.h"

#include "BenchSupport.h"
#include "TorchMlp.h"
#include "TorchPolicy.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace mlbridge;
using bench::Allocations;
using bench::median;
using bench::timeCalls;

namespace {
const std::string Models = MLBRIDGE_BENCH_TORCH_MODELS;

/// Raw LibTorch: the module's forward() on one preallocated input.
struct RawForward {
  torch::jit::Module Module;
  at::Tensor In;
  float Out = 0;
  RawForward(const std::string &Path, int64_t N)
      : Module(torch::jit::load(Path)), In(torch::zeros({1, N})) {
    Module.eval();
  }
  bool call(int I) {
    c10::InferenceMode Guard;
    In.data_ptr<float>()[0] = float(I % 7);
    at::Tensor Y = Module.forward({In}).toTensor();
    Out = Y.data_ptr<float>()[0];
    return true;
  }
};

/// One configuration's calls: a runner's evaluate() after setting input 0.
std::function<bool(int)> runnerCall(ModelRunner &R) {
  return [&R](int I) {
    R.input<float>(0)[0] = float(I % 7);
    return !R.evaluate();
  };
}

/// Heap allocations per call of \p Call, over 1000 calls.
double allocationsPerCall(const std::function<bool(int)> &Call) {
  uint64_t Before = Allocations.load();
  timeCalls(Call, 1000);
  return double(Allocations.load() - Before) / 1000;
}

template <class AotModel>
int benchModel(const char *Name, const std::string &Stem, int64_t In,
               int64_t Out, int Calls, int Reps, bench::JsonReport &Report) {
  const std::vector<TensorSpec> Inputs = {TensorSpec::of<float>("x", {1, In})};
  const std::vector<TensorSpec> Outputs = {
      TensorSpec::of<float>("y", {1, Out})};
  RawForward Raw(Models + "/" + Stem + ".pt", In);
  auto Torch = TorchModelRunner::createFromFile(Models + "/" + Stem + ".pt",
                                                Inputs, Outputs);
  auto Onnx = OnnxModelRunner::createFromFile(Models + "/" + Stem + ".onnx",
                                              Inputs, Outputs);
  auto Aot = AotModelRunner<AotModel>::create(Inputs, Outputs);
  if (!Torch || !Onnx || !Aot) {
    std::fprintf(stderr, "%s: %s\n", Name,
                 (!Torch  ? Torch.error()
                  : !Onnx ? Onnx.error()
                          : Aot.error())
                     .toString()
                     .c_str());
    return 1;
  }
  struct Config {
    const char *Label;
    std::function<bool(int)> Call;
    std::vector<double> Micros = {}, Ratios = {};
    double Allocs = 0;
  };
  ModelRunner &AotRunner = **Aot;
  std::vector<Config> Configs;
  Configs.push_back({"raw forward()", [&](int I) { return Raw.call(I); }});
  Configs.push_back({"TorchModelRunner", runnerCall(**Torch)});
  Configs.push_back({"OnnxModelRunner", runnerCall(**Onnx)});
  Configs.push_back({"AotModelRunner", runnerCall(AotRunner)});
  for (Config &C : Configs) {
    timeCalls(C.Call, 500);
    C.Allocs = allocationsPerCall(C.Call);
  }
  for (int Rep = 0; Rep < Reps; ++Rep)
    for (Config &C : Configs) {
      C.Micros.push_back(timeCalls(C.Call, Calls));
      C.Ratios.push_back(C.Micros.back() / Configs[0].Micros.back());
    }
  // The four agree on one input (the AOT model within float rounding).
  for (Config &C : Configs)
    C.Call(3);
  const float Y[] = {Raw.Out, (*(*Torch)->output<float>(0))[0],
                     (*(*Onnx)->output<float>(0))[0],
                     (*AotRunner.output<float>(0))[0]};
  for (float V : Y)
    if (std::fabs(V - Y[0]) > 1e-4f * std::max(1.0f, std::fabs(Y[0]))) {
      std::fprintf(stderr, "%s: the runners disagree (%g vs %g)\n", Name, V,
                   Y[0]);
      return 1;
    }
  for (Config &C : Configs) {
    const bool Baseline = &C == &Configs[0];
    Report.add({std::string(Name) + ": " + C.Label, C.Micros,
                Baseline ? std::vector<double>() : C.Ratios, C.Allocs});
    auto MM = std::minmax_element(C.Ratios.begin(), C.Ratios.end());
    std::printf("%-26s %-18s %10.2f %8.2fx [%.2f..%.2f] %10.1f\n", Name,
                C.Label, median(C.Micros), median(C.Ratios), *MM.first,
                *MM.second, C.Allocs);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  bench::Options Opts{20000, 7, ""};
  if (!bench::parseOptions(argc, argv, Opts))
    return 2;
  bench::pinTo(0);
  at::set_num_threads(1);
  std::printf("LibTorch in-process: TorchModelRunner::evaluate() vs raw "
              "Module::forward(), ONNX Runtime and the AOT-compiled model on "
              "the same PyTorch models, same run, %d reps x %d calls, CPU 0, "
              "one thread\n\n",
              Opts.Reps, Opts.Calls);
  std::printf("%-26s %-18s %10s %20s %10s\n", "model", "runner", "us",
              "x forward [min..max]", "allocs");
  bench::JsonReport Report("mlbridge-bench-torch");
  Report.note("regime", "pinned to CPU 0, one intra-op thread");
  Report.note("calls", Opts.Calls);
  Report.note("reps", Opts.Reps);
  Report.note("baseline", "raw torch::jit::Module::forward() in inference "
                          "mode on a preallocated input");
  try {
    if (benchModel<aot_bench::TorchMlp>("MLP 64->64->1", "torch_mlp", 64, 1,
                                        Opts.Calls, Opts.Reps, Report) ||
        benchModel<aot_bench::TorchPolicy>("policy 300->256->256->16",
                                           "torch_policy", 300, 16, Opts.Calls,
                                           Opts.Reps, Report))
      return 1;
  } catch (const std::exception &E) {
    std::fprintf(stderr, "LibTorch failed: %s\n", E.what());
    return 1;
  }
  if (!Opts.JsonPath.empty() && !Report.write(Opts.JsonPath))
    return 1;
  return 0;
}

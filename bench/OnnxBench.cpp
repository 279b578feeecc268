//===- OnnxBench.cpp - OnnxModelRunner vs raw ONNX Runtime Run() ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// evaluate() of OnnxModelRunner on a 64->64->1 MLP and a 300->256->256->16
// policy, next to raw ONNX Runtime Run() with preallocated, bound IO measured
// in the same run, rep by rep; and the same model served over pipes from
// Python (`mlbridge serve --policy model.onnx`), to show the in-process
// speedup. Everything pinned to CPU 0. Also counts C++ heap allocations per
// call for both: ONNX Runtime's Run() itself allocates; the runner adds none.
//
//   mlbridge-bench-onnx [--calls N] [--reps R]
//
//===----------------------------------------------------------------------===//

#include "mlbridge/OnnxModelRunner.h"
#include "mlbridge/PipeModelRunner.h"

#include "BenchSupport.h"

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <signal.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace mlbridge;
using bench::Allocations;
using bench::Child;
using bench::median;
using bench::timeCalls;
using Clock = std::chrono::steady_clock;

namespace {
const std::string Python = MLBRIDGE_BENCH_PYTHON;
const std::string Source = MLBRIDGE_SOURCE_DIR;

/// Raw ONNX Runtime: one session, IO bound once to preallocated buffers.
struct RawOrt {
  Ort::Env Env{ORT_LOGGING_LEVEL_ERROR, "bench"};
  std::unique_ptr<Ort::Session> Session;
  std::unique_ptr<Ort::IoBinding> Binding;
  std::vector<float> In, Out;
  std::vector<Ort::Value> Values;
  Ort::RunOptions Run;
  RawOrt(const std::string &Path, int64_t N, int64_t M) : In(N), Out(M) {
    Ort::SessionOptions SO;
    SO.SetIntraOpNumThreads(1);
    SO.SetInterOpNumThreads(1);
    SO.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    Session = std::make_unique<Ort::Session>(Env, Path.c_str(), SO);
    auto Cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    int64_t InShape[] = {1, N}, OutShape[] = {1, M};
    Values.push_back(
        Ort::Value::CreateTensor<float>(Cpu, In.data(), N, InShape, 2));
    Values.push_back(
        Ort::Value::CreateTensor<float>(Cpu, Out.data(), M, OutShape, 2));
    Binding = std::make_unique<Ort::IoBinding>(*Session);
    Binding->BindInput("x", Values[0]);
    Binding->BindOutput("y", Values[1]);
  }
  bool call(int I) {
    In[0] = float(I % 7);
    Session->Run(Run, *Binding);
    return true;
  }
};

} // namespace

int main(int argc, char **argv) {
  bench::Options Opts{20000, 7, ""};
  if (!bench::parseOptions(argc, argv, Opts))
    return 2;
  const int Calls = Opts.Calls, Reps = Opts.Reps;
  bench::pinTo(0);
  char Template[] = "/tmp/mlbridge-onnx-bench-XXXXXX";
  std::string Dir = ::mkdtemp(Template);
  std::string Make = Python + " " + Source +
                     "/tools/make_onnx_test_models.py " + Dir + " >/dev/null";
  if (std::system(Make.c_str()) != 0) {
    std::fprintf(stderr, "cannot build the models (needs Python onnx)\n");
    return 1;
  }
  std::printf("ONNX Runtime in-process: OnnxModelRunner::evaluate() vs raw "
              "Run() with bound IO, same run, %d reps x %d calls, CPU 0\n\n",
              Reps, Calls);
  std::printf("%-26s %10s %12s %18s %12s %14s %12s\n", "model", "raw us",
              "runner us", "x raw [min..max]", "pipe us", "pipe / runner",
              "allocs runner/raw");
  bench::JsonReport Report("mlbridge-bench-onnx");
  Report.note("regime", "pinned to CPU 0");
  Report.note("calls", Calls);
  Report.note("reps", Reps);
  Report.note("baseline", "raw Ort::Session::Run() with bound IO");
  struct Model {
    const char *Name, *File;
    int64_t In, Out;
  };
  for (const Model &M :
       {Model{"MLP 64->64->1", "mlp.onnx", 64, 1},
        Model{"policy 300->256->256->16", "policy.onnx", 300, 16}}) {
    std::string Path = Dir + "/" + M.File;
    RawOrt Raw(Path, M.In, M.Out);
    auto R = OnnxModelRunner::createFromFile(
        Path, {TensorSpec::of<float>("x", {1, M.In})},
        {TensorSpec::of<float>("y", {1, M.Out})});
    if (!R) {
      std::fprintf(stderr, "%s\n", R.error().toString().c_str());
      return 1;
    }
    OnnxModelRunner &Runner = **R;
    auto RunnerCall = [&](int I) {
      *Runner.input<float>(0) = float(I % 7);
      return !Runner.evaluate();
    };
    std::vector<double> RawUs, RunUs, Ratio;
    timeCalls([&](int I) { return Raw.call(I); }, 500);
    timeCalls(RunnerCall, 500);
    uint64_t Before = Allocations.load();
    timeCalls(RunnerCall, 1000);
    double AllocsPerCall = double(Allocations.load() - Before) / 1000;
    Before = Allocations.load();
    timeCalls([&](int I) { return Raw.call(I); }, 1000);
    double RawAllocsPerCall = double(Allocations.load() - Before) / 1000;
    for (int Rep = 0; Rep < Reps; ++Rep) {
      RawUs.push_back(timeCalls([&](int I) { return Raw.call(I); }, Calls));
      RunUs.push_back(timeCalls(RunnerCall, Calls));
      Ratio.push_back(RunUs.back() / RawUs.back());
    }
    // The same model served over pipes from Python (extended, bitstream).
    PipeOptions O;
    O.Protocol = PipeProtocol::Extended;
    O.OpenTimeout = std::chrono::seconds(60);
    auto Pipe =
        PipeModelRunner::create({TensorSpec::of<float>("x", {1, M.In})},
                                {TensorSpec::of<float>("y", {1, M.Out})}, O);
    double PipeUs = -1;
    if (Pipe) {
      Child Host({Python, "-m", "mlbridge", "serve", "--pipe",
                  (*Pipe)->channelBase(), "--policy", Path});
      auto PipeCall = [&](int I) {
        *(*Pipe)->input<float>(0) = float(I % 7);
        return !(*Pipe)->evaluate();
      };
      if (timeCalls(PipeCall, 200) > 0)
        PipeUs = timeCalls(PipeCall, std::max(1000, Calls / 20));
      Pipe->reset();
    }
    Report.add(
        {std::string(M.Name) + ": raw Run()", RawUs, {}, RawAllocsPerCall});
    Report.add({std::string(M.Name) + ": OnnxModelRunner", RunUs, Ratio,
                AllocsPerCall});
    auto MM = std::minmax_element(Ratio.begin(), Ratio.end());
    std::printf("%-26s %10.2f %12.2f %8.2fx [%.2f..%.2f] %12.1f %13.0fx "
                "%8.1f/%.1f\n",
                M.Name, median(RawUs), median(RunUs), median(Ratio), *MM.first,
                *MM.second, PipeUs, PipeUs / median(RunUs), AllocsPerCall,
                RawAllocsPerCall);
  }
  for (const char *F :
       {"mlp.onnx", "mlp.cases.bin", "policy.onnx", "two_io.onnx"})
    ::unlink((Dir + "/" + F).c_str());
  ::rmdir(Dir.c_str());
  if (!Opts.JsonPath.empty() && !Report.write(Opts.JsonPath))
    return 1;
  return 0;
}

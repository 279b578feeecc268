//===- llvm/PluginOptions.cpp - Configuration of the LLVM plugin ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PluginOptions.h"

#include "llvm/Support/CommandLine.h"

#include <cmath>
#include <cstdlib>

using namespace llvm;

namespace {
cl::opt<std::string> RunnerOpt(
    "mlbridge-runner",
    cl::desc("mlbridge inline advisor: none|default|constant|pipe|grpc|onnx|"
             "aot (env MLBRIDGE_RUNNER)"));
cl::opt<std::string>
    ModelOpt("mlbridge-model",
             cl::desc("ONNX file (onnx) or AOT module (aot) (env "
                      "MLBRIDGE_MODEL)"));
cl::opt<std::string> ChannelOpt("mlbridge-channel",
                                cl::desc("pipe channel base: BASE.in/BASE.out "
                                         "(env MLBRIDGE_CHANNEL)"));
cl::opt<std::string>
    GrpcOpt("mlbridge-grpc-target",
            cl::desc("gRPC model server, unix:PATH or HOST:PORT (env "
                     "MLBRIDGE_GRPC_TARGET)"));
cl::opt<int64_t> TimeoutOpt("mlbridge-timeout-ms",
                            cl::desc("deadline of each remote step (env "
                                     "MLBRIDGE_TIMEOUT_MS, default 10000)"));
cl::opt<int64_t> ConstantOpt("mlbridge-constant",
                             cl::desc("answer of the constant runner (env "
                                      "MLBRIDGE_CONSTANT)"));
cl::opt<std::string>
    LogOpt("mlbridge-log",
           cl::desc("write a training log of features, LLVM's decision and "
                    "the advice (env MLBRIDGE_LOG)"));
cl::opt<std::string>
    StatsOpt("mlbridge-stats",
             cl::desc("append per-module decision statistics as JSON lines "
                      "(env MLBRIDGE_STATS)"));
cl::opt<bool> CompareOpt(
    "mlbridge-compare-default",
    cl::desc("also compute LLVM's decision for every call site, to count "
             "agreement (env MLBRIDGE_COMPARE_DEFAULT=1)"));

cl::opt<std::string> SizeThresholdOpt(
    "mlbridge-size-increase-threshold",
    cl::desc("stop asking the model once the module grew by this factor, or "
             "'none' (env MLBRIDGE_SIZE_INCREASE_THRESHOLD; default: LLVM's "
             "2.0, none for the default runner)"));

/// The option's value if given on the command line, else \p Env's.
std::string pick(const cl::opt<std::string> &Opt, const char *Env) {
  if (Opt.getNumOccurrences())
    return Opt;
  const char *V = std::getenv(Env);
  return V ? V : "";
}

int64_t pickInt(const cl::opt<int64_t> &Opt, const char *Env, int64_t Default) {
  if (Opt.getNumOccurrences())
    return Opt;
  const char *V = std::getenv(Env);
  if (!V || !*V)
    return Default;
  char *End = nullptr;
  long long N = std::strtoll(V, &End, 10);
  return End && !*End ? N : Default;
}

/// A size threshold: a factor >= 1, or "none" (no cap, infinity).
std::optional<double> parseThreshold(const std::string &Text,
                                     std::string &Problem) {
  if (Text.empty())
    return std::nullopt;
  if (Text == "none" || Text == "inf")
    return HUGE_VAL;
  char *End = nullptr;
  double V = std::strtod(Text.c_str(), &End);
  if (End == Text.c_str() || *End || !(V >= 1.0)) {
    Problem = "-mlbridge-size-increase-threshold must be a factor >= 1 or "
              "'none', got '" +
              Text + "'";
    return std::nullopt;
  }
  return V;
}
} // namespace

namespace mlbridge {

const PluginOptions &pluginOptions() {
  static const PluginOptions Options = [] {
    PluginOptions O;
    O.Runner = pick(RunnerOpt, "MLBRIDGE_RUNNER");
    if (O.Runner.empty())
      O.Runner = "none";
    O.Model = pick(ModelOpt, "MLBRIDGE_MODEL");
    O.Channel = pick(ChannelOpt, "MLBRIDGE_CHANNEL");
    O.GrpcTarget = pick(GrpcOpt, "MLBRIDGE_GRPC_TARGET");
    O.Timeout = std::chrono::milliseconds(
        pickInt(TimeoutOpt, "MLBRIDGE_TIMEOUT_MS", 10000));
    O.Constant = pickInt(ConstantOpt, "MLBRIDGE_CONSTANT", 0);
    O.LogPath = pick(LogOpt, "MLBRIDGE_LOG");
    O.StatsPath = pick(StatsOpt, "MLBRIDGE_STATS");
    const char *Compare = std::getenv("MLBRIDGE_COMPARE_DEFAULT");
    O.CompareDefault = CompareOpt.getNumOccurrences()
                           ? bool(CompareOpt)
                           : (Compare && std::string(Compare) == "1");
    O.SizeIncreaseThreshold = parseThreshold(
        pick(SizeThresholdOpt, "MLBRIDGE_SIZE_INCREASE_THRESHOLD"), O.Problem);
    if (!O.SizeIncreaseThreshold && O.Runner == "default")
      O.SizeIncreaseThreshold = HUGE_VAL;
    return O;
  }();
  return Options;
}

} // namespace mlbridge

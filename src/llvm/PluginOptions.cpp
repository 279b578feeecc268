//===- llvm/PluginOptions.cpp - Configuration of the LLVM plugin ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PluginOptions.h"
#include "InlineRunners.h"
#include "support/PluginSettings.h"

#include "llvm/Support/CommandLine.h"

#include <cmath>
#include <cstdlib>

using namespace llvm;

namespace {
cl::opt<std::string> RunnerOpt(
    "mlbridge-runner",
    cl::desc("mlbridge inline advisor: none|default|constant|pipe|grpc|onnx|"
             "aot, or a runner configuration such as onnx:FILE or "
             "pipe:BASE,protocol=extended (env MLBRIDGE_INLINE_RUNNER)"));
cl::opt<std::string>
    ModelOpt("mlbridge-model",
             cl::desc("ONNX file (onnx) or AOT module (aot) (env "
                      "MLBRIDGE_INLINE_MODEL)"));
cl::opt<std::string> ChannelOpt("mlbridge-channel",
                                cl::desc("pipe channel base: BASE.in/BASE.out "
                                         "(env MLBRIDGE_INLINE_CHANNEL)"));
cl::opt<std::string>
    GrpcOpt("mlbridge-grpc-target",
            cl::desc("gRPC model server, unix:PATH or HOST:PORT (env "
                     "MLBRIDGE_INLINE_GRPC_TARGET)"));
cl::opt<int64_t>
    TimeoutOpt("mlbridge-timeout-ms",
               cl::desc("deadline of each remote step (env "
                        "MLBRIDGE_INLINE_TIMEOUT_MS, default 10000)"));
cl::opt<int64_t> ConstantOpt("mlbridge-constant",
                             cl::desc("answer of the constant runner (env "
                                      "MLBRIDGE_INLINE_CONSTANT)"));
cl::opt<std::string>
    LogOpt("mlbridge-log",
           cl::desc("write a training log of features, LLVM's decision and "
                    "the advice (env MLBRIDGE_INLINE_LOG)"));
cl::opt<std::string>
    StatsOpt("mlbridge-stats",
             cl::desc("append per-module decision statistics as JSON lines "
                      "(env MLBRIDGE_INLINE_STATS)"));
cl::opt<bool> CompareOpt(
    "mlbridge-compare-default",
    cl::desc("also compute LLVM's decision for every call site, to count "
             "agreement (env MLBRIDGE_INLINE_COMPARE_DEFAULT=1)"));

cl::opt<std::string> SizeThresholdOpt(
    "mlbridge-size-increase-threshold",
    cl::desc(
        "stop asking the model once the module grew by this factor, or "
        "'none' (env MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD; default: LLVM's "
        "2.0, none for the default runner)"));

cl::opt<std::string> DescribeOpt(
    "mlbridge-describe",
    cl::desc("write the plugin's description (its options, features and "
             "answer; docs/plugin-description.md) to this file and leave "
             "every call site to LLVM (env MLBRIDGE_INLINE_DESCRIBE)"));

cl::opt<std::string> DefersWhenOpt(
    "mlbridge-defers-when",
    cl::desc("give LLVM's decision without asking the runner where this "
             "input is 1: is_callee_linkonce_odr, or none (env "
             "MLBRIDGE_INLINE_DEFERS_WHEN; default none)"));

} // namespace

/// LLVM's -mlbridge-KEY above.
const std::vector<mlbridge::OptionSpec> &mlbridge::inlineOptionSpecs() {
  using mlbridge::OptionKind;
  static const std::vector<mlbridge::OptionSpec> Specs = {
      {"runner", OptionKind::Text},
      {"model", OptionKind::Text},
      {"channel", OptionKind::Text},
      {"grpc-target", OptionKind::Text},
      {"timeout-ms", OptionKind::Integer, 0, mlbridge::MaxRunnerTimeoutMs},
      {"constant", OptionKind::Integer},
      {"log", OptionKind::Text},
      {"stats", OptionKind::Text},
      {"compare-default", OptionKind::Flag},
      {"size-increase-threshold", OptionKind::Text},
      {"defers-when", OptionKind::Text},
      {"describe", OptionKind::Text},
  };
  return Specs;
}

namespace {

/// What LLVM's command line gave, as (key, value) pairs.
std::vector<std::pair<std::string, std::string>> givenOptions() {
  std::vector<std::pair<std::string, std::string>> Given;
  auto Text = [&](const char *Key, const cl::opt<std::string> &Opt) {
    if (Opt.getNumOccurrences())
      Given.emplace_back(Key, Opt.getValue());
  };
  auto Number = [&](const char *Key, const cl::opt<int64_t> &Opt) {
    if (Opt.getNumOccurrences())
      Given.emplace_back(Key, std::to_string(Opt.getValue()));
  };
  Text("runner", RunnerOpt);
  Text("model", ModelOpt);
  Text("channel", ChannelOpt);
  Text("grpc-target", GrpcOpt);
  Number("timeout-ms", TimeoutOpt);
  Number("constant", ConstantOpt);
  Text("log", LogOpt);
  Text("stats", StatsOpt);
  if (CompareOpt.getNumOccurrences())
    Given.emplace_back("compare-default", CompareOpt ? "1" : "0");
  Text("size-increase-threshold", SizeThresholdOpt);
  Text("defers-when", DefersWhenOpt);
  Text("describe", DescribeOpt);
  return Given;
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
    if (!Problem.empty())
      return std::nullopt;
    Problem = "-mlbridge-size-increase-threshold must be a factor >= 1 or "
              "'none', got '" +
              Text + "'";
    return std::nullopt;
  }
  return V;
}
/// Resolves the runner configuration of \p O: the string form when
/// O.Runner has one (a ':' or ','; complete by itself, the separate options
/// are then ignored), otherwise a kind name completed by the separate
/// options (-mlbridge-model, -mlbridge-channel, -mlbridge-timeout-ms, ...).
mlbridge::Expected<mlbridge::RunnerConfig>
resolveConfig(const mlbridge::PluginOptions &O) {
  using namespace mlbridge;
  if (O.Runner.find_first_of(":,") != std::string::npos)
    return RunnerConfig::parse(O.Runner); // complete: other options ignored
  RunnerConfig C;
  C.ConnectTimeout = C.Timeout = O.Timeout;
  if (O.Runner == "default") {
    C.Kind = RunnerKind::Echo;
    C.Argument = "inlining_default";
  } else {
    auto Kind = parseRunnerKind(O.Runner);
    if (!Kind)
      return makeError(ErrorCode::InvalidArgument,
                       "-mlbridge-runner: ", Kind.error().message(),
                       " or none, default");
    C.Kind = *Kind;
    switch (C.Kind) {
    case RunnerKind::Pipe:
      C.Argument = O.Channel;
      if (C.Argument.empty())
        return makeError(ErrorCode::InvalidArgument,
                         "-mlbridge-runner=pipe needs -mlbridge-channel=BASE");
      break;
    case RunnerKind::Grpc:
      C.Argument = O.GrpcTarget;
      break;
    case RunnerKind::Onnx:
    case RunnerKind::Aot:
    case RunnerKind::Torch:
      C.Argument = O.Model;
      break;
    case RunnerKind::Constant:
      C.Argument = std::to_string(O.Constant);
      break;
    case RunnerKind::Echo:
      break; // needs the string form, echo:NAME
    }
  }
  if (mlbridge::Error E = C.check())
    return E;
  return C;
}
} // namespace

namespace mlbridge {

const PluginOptions &pluginOptions() {
  static const PluginOptions Options = [] {
    PluginOptions O;
    PluginSettings Settings = PluginSettings::resolve(
        "INLINE", inlineOptionSpecs(), givenOptions(), "-mlbridge-");
    O.Problem = Settings.Problem;
    O.Runner = Settings.text("runner");
    if (O.Runner.empty())
      O.Runner = "none";
    O.Model = Settings.text("model");
    O.Channel = Settings.text("channel");
    O.GrpcTarget = Settings.text("grpc-target");
    O.Timeout =
        std::chrono::milliseconds(Settings.integer("timeout-ms", 10000));
    O.Constant = Settings.integer("constant", 0);
    O.LogPath = Settings.text("log");
    O.StatsPath = Settings.text("stats");
    O.CompareDefault = Settings.flag("compare-default");
    O.SizeIncreaseThreshold =
        parseThreshold(Settings.text("size-increase-threshold"), O.Problem);
    O.DescribePath = Settings.text("describe");
    O.DefersWhen = Settings.text("defers-when");
    if (O.DefersWhen == "none")
      O.DefersWhen.clear();
    if (!O.DefersWhen.empty() && O.DefersWhen != OdrCalleeFeature &&
        O.Problem.empty())
      O.Problem = std::string("-mlbridge-defers-when must be ") +
                  OdrCalleeFeature + " or none, got '" + O.DefersWhen + "'";
    if (O.Runner != "none") {
      auto Config = resolveConfig(O);
      if (Config)
        O.Config = std::move(*Config);
      else if (O.Problem.empty())
        O.Problem = Config.error().message();
    }
    // The runner answering LLVM's own decision reproduces LLVM's inliner
    // only without the MLGO size cap.
    bool EchoesDefault = O.Config.Kind == RunnerKind::Echo &&
                         O.Config.Argument == "inlining_default";
    if (!O.SizeIncreaseThreshold && O.Problem.empty() && EchoesDefault)
      O.SizeIncreaseThreshold = HUGE_VAL;
    return O;
  }();
  return Options;
}

} // namespace mlbridge

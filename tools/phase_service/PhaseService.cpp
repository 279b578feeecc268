//===- phase_service/PhaseService.cpp - mlbridge-phase-service ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// mlbridge-phase-service: a long-lived LLVM 19 phase-ordering compiler that
// asks an mlbridge runner which pass to run next (docs/phase-ordering.md).
//
//   mlbridge-phase-service --list-actions
//   mlbridge-phase-service --runner CONFIG --modules LIST [--output FILE]
//   mlbridge-phase-service --runner CONFIG --module IN -o OUT [--max-steps N]
//                          [--stats FILE] [--no-baseline]
//   mlbridge-phase-service --pipeline TEXT --module IN -o OUT
//
// Exit status: 0 done, 1 runtime error (a file, the runner, the peer gone),
// 2 usage. Messages go to stderr; only --list-actions writes to stdout.
//
//===----------------------------------------------------------------------===//

#include "common/CommandLine.h"
#include "common/PhaseDeployment.h"
#include "mlbridge/RunnerConfig.h"
#include "mlbridge/llvm/PhaseOrdering.h"
#include "mlbridge/llvm/PhaseProtocol.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace mlbridge;

namespace {

constexpr const char *Tool = "mlbridge-phase-service";
constexpr int ExitOk = 0, ExitFailure = 1, ExitUsage = 2;
/// Largest module list accepted.
constexpr uint64_t MaxListBytes = uint64_t(64) << 20;

constexpr const char *Usage =
    "usage: mlbridge-phase-service --list-actions\n"
    "       mlbridge-phase-service --runner CONFIG --modules LIST "
    "[--output FILE]\n"
    "       mlbridge-phase-service --runner CONFIG --module IN -o OUT "
    "[--max-steps N] [--stats FILE]\n"
    "                      [--no-baseline]\n"
    "       mlbridge-phase-service --pipeline TEXT --module IN -o OUT\n"
    "\n"
    "  --list-actions      print actions, features and protocol as JSON\n"
    "  --runner CONFIG     the runner (docs/runner-config.md), e.g.\n"
    "                      pipe:/tmp/d/ch,protocol=extended or onnx:p.onnx\n"
    "  --modules LIST      training: a file of module paths, one a line\n"
    "                      (relative paths are relative to LIST)\n"
    "  --pipeline TEXT     a constant pipeline instead of a runner's choice\n"
    "                      (opt -passes= syntax; each default<L> is clang\n"
    "                      -L's pipeline); default<Oz> if it breaks the "
    "module\n"
    "  --module IN         deployment: the module to optimise\n"
    "  -o, --output FILE   where WRITE (training) or the result goes\n"
    "  --max-steps N       deployment: at most N actions (default 32)\n"
    "  --stats FILE        deployment: append the run's statistics record\n"
    "                      (one JSON line, docs/run-stats.md)\n"
    "  --no-baseline       deployment: skip the -Oz run that computes the\n"
    "                      observation's baseline_instcount (then 0), for\n"
    "                      models that do not read it\n"
    "  --rollback previous|pristine\n"
    "                      where a step that breaks the module goes back to\n"
    "                      (default previous)\n"
    "  --version, --help\n";

struct Options {
  bool ListActions = false;
  bool NoBaseline = false;
  std::string Runner, Pipeline, Modules, Module, Output, Stats;
  std::optional<int64_t> MaxSteps;
  phase::Rollback OnFailure = phase::Rollback::Previous;
};

int usage(const std::string &Why) {
  std::fprintf(stderr, "%s: error: %s (see %s --help)\n", Tool, Why.c_str(),
               Tool);
  return ExitUsage;
}

int fail(const std::string &Why) {
  std::fprintf(stderr, "%s: error: %s\n", Tool, Why.c_str());
  return ExitFailure;
}

/// Parses argv into \p O; returns an error message, or "" when valid.
std::string parseArgs(int Argc, char **Argv, Options &O) {
  for (int I = 1; I < Argc; ++I) {
    const tools::Argument Split = tools::splitArgument(Argv[I]);
    std::string_view Arg = Split.Name, Value = Split.Value;
    const bool Inline = Split.Inline;
    auto Takes = [&](std::string &To) -> std::string {
      if (!Inline) {
        if (I + 1 >= Argc)
          return std::string(Arg) + " needs a value";
        Value = Argv[++I];
      }
      To = std::string(Value);
      return "";
    };
    std::string Why, Text;
    if (Arg == "--list-actions" && !Inline)
      O.ListActions = true;
    else if (Arg == "--no-baseline" && !Inline)
      O.NoBaseline = true;
    else if (Arg == "--runner")
      Why = Takes(O.Runner);
    else if (Arg == "--pipeline")
      Why = Takes(O.Pipeline);
    else if (Arg == "--modules")
      Why = Takes(O.Modules);
    else if (Arg == "--module")
      Why = Takes(O.Module);
    else if (Arg == "-o" || Arg == "--output")
      Why = Takes(O.Output);
    else if (Arg == "--stats")
      Why = Takes(O.Stats);
    else if (Arg == "--max-steps") {
      if ((Why = Takes(Text)).empty() &&
          !(O.MaxSteps = tools::parseCount(Text)))
        Why = "--max-steps needs a whole number, got '" + Text + "'";
    } else if (Arg == "--rollback") {
      if ((Why = Takes(Text)).empty()) {
        if (Text == "previous")
          O.OnFailure = phase::Rollback::Previous;
        else if (Text == "pristine")
          O.OnFailure = phase::Rollback::Pristine;
        else
          Why = "--rollback is previous or pristine, not '" + Text + "'";
      }
    } else
      Why = "unknown argument '" + std::string(Argv[I]) + "'";
    if (!Why.empty())
      return Why;
  }
  if (O.ListActions) {
    if (!O.Runner.empty() || !O.Pipeline.empty() || !O.Modules.empty() ||
        !O.Module.empty())
      return "--list-actions takes no other option";
    return "";
  }
  if (!O.Pipeline.empty()) {
    if (!O.Runner.empty() || !O.Modules.empty() || O.MaxSteps ||
        !O.Stats.empty() || O.NoBaseline)
      return "--pipeline takes only --module IN, -o OUT and --rollback";
    if (O.Module.empty() || O.Output.empty())
      return "--pipeline needs --module IN and -o OUT";
    return "";
  }
  if (O.Runner.empty())
    return "give --runner CONFIG (or --list-actions)";
  if (O.Modules.empty() == O.Module.empty())
    return "give either --modules LIST (training) or --module IN "
           "(deployment)";
  if (!O.Module.empty() && O.Output.empty())
    return "deployment (--module) needs -o OUT";
  if (!O.Modules.empty() && O.MaxSteps)
    return "--max-steps is for deployment (--module)";
  if (!O.Modules.empty() && !O.Stats.empty())
    return "--stats is for deployment (--module)";
  if (!O.Modules.empty() && O.NoBaseline)
    return "--no-baseline is for deployment (--module)";
  return "";
}

/// The module paths listed in file \p List: one a line; blank lines and
/// lines starting with '#' are skipped; relative paths are relative to the
/// list's directory.
Expected<std::vector<std::string>> readModuleList(const std::string &List) {
  std::ifstream In(List, std::ios::binary);
  if (!In)
    return makeError(ErrorCode::IO, "cannot read the module list '", List, "'");
  std::string Text;
  char Buffer[1 << 16];
  while (Text.size() <= MaxListBytes &&
         In.read(Buffer, sizeof(Buffer)).gcount() > 0)
    Text.append(Buffer, static_cast<size_t>(In.gcount()));
  if (In.bad())
    return makeError(ErrorCode::IO, "cannot read the module list '", List, "'");
  if (Text.size() > MaxListBytes)
    return makeError(ErrorCode::TooLarge, "the module list '", List,
                     "' is larger than ", std::to_string(MaxListBytes),
                     " bytes");
  size_t Slash = List.rfind('/');
  std::string Dir = Slash == std::string::npos ? "" : List.substr(0, Slash + 1);
  std::vector<std::string> Paths;
  size_t Start = 0;
  while (Start < Text.size()) {
    size_t End = Text.find('\n', Start);
    if (End == std::string::npos)
      End = Text.size();
    std::string Line = Text.substr(Start, End - Start);
    Start = End + 1;
    while (!Line.empty() &&
           (Line.back() == '\r' || Line.back() == ' ' || Line.back() == '\t'))
      Line.pop_back();
    if (Line.empty() || Line[0] == '#')
      continue;
    Paths.push_back(Line[0] == '/' ? Line : Dir + Line);
  }
  if (Paths.empty())
    return makeError(ErrorCode::InvalidArgument, "the module list '", List,
                     "' names no module");
  return Paths;
}

int listActions() {
  if (Error E = phase::checkActions())
    return fail(E.message());
  std::string Text = phase::describeService();
  if (std::fwrite(Text.data(), 1, Text.size(), stdout) != Text.size() ||
      std::fflush(stdout) != 0)
    return fail("cannot write to stdout");
  return ExitOk;
}

int train(const Options &O, const RunnerConfig &Config, phase::Session &S) {
  Expected<std::vector<std::string>> Modules = readModuleList(O.Modules);
  if (!Modules)
    return fail(Modules.error().message());
  Expected<RunnerFactories> Factories = tools::runnerFactories(Config.Kind);
  if (!Factories)
    return fail("runner " + Config.str() + ": " + Factories.error().message());
  auto Runner = createRunner(Config, phase::observationSpecs(),
                             phase::commandSpecs(), *Factories);
  if (!Runner)
    return fail("runner " + Config.str() + ": " + Runner.error().message());
  phase::TrainingOptions T{std::move(*Modules), O.Output};
  if (Error E = phase::serveTraining(**Runner, S, T))
    return fail("runner " + Config.str() + ": " + E.toString());
  return ExitOk;
}

/// Deployment: a constant pipeline or a runner's choices on one module.
int deploy(const Options &O, const std::optional<RunnerConfig> &Config,
           phase::Session &S) {
  if (Error E = S.loadFile(O.Module))
    return fail(E.message());
  tools::DeploymentPlan Plan;
  Plan.Pipeline = O.Pipeline;
  Plan.Runner = Config;
  Plan.MaxSteps = O.MaxSteps.value_or(tools::DefaultMaxSteps);
  Plan.Stats = O.Stats;
  if (Error E = tools::optimiseLoaded(Plan, S, Tool))
    return E.code() == ErrorCode::InvalidArgument ? usage(E.message())
                                                  : fail(E.message());
  if (Error E = S.writeBitcode(O.Output))
    return fail(E.message());
  return ExitOk;
}

} // namespace

int main(int Argc, char **Argv) {
  for (int I = 1; I < Argc; ++I) {
    std::string_view Arg = Argv[I];
    if (Arg == "--help" || Arg == "-h") {
      std::fputs(Usage, stdout);
      return ExitOk;
    }
    if (Arg == "--version") {
      std::printf("%s %s\n", Tool, MLBRIDGE_VERSION_STRING);
      return ExitOk;
    }
  }
  Options O;
  if (std::string Why = parseArgs(Argc, Argv, O); !Why.empty())
    return usage(Why);
  if (O.ListActions)
    return listActions();
  std::optional<RunnerConfig> Config;
  if (O.Pipeline.empty()) {
    Expected<RunnerConfig> Parsed = RunnerConfig::parse(O.Runner);
    if (!Parsed)
      return usage(Parsed.error().message());
    Config = std::move(*Parsed);
  }
  phase::SessionOptions SO;
  SO.OnFailure = O.OnFailure;
  // A constant pipeline reads no observation: no baseline to compute.
  SO.ComputeBaseline = Config.has_value() && !O.NoBaseline;
  Expected<std::unique_ptr<phase::Session>> S = phase::Session::create(SO);
  if (!S)
    return fail(S.error().message());
  if (Config && O.Module.empty())
    return train(O, *Config, **S);
  return deploy(O, Config, **S);
}

//===- pipeline_clang/PipelineClang.cpp - mlbridge-pipeline-clang ---------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// mlbridge-pipeline-clang: clang-19 whose compilations of a C or C++ source
// to an object take a chosen module pipeline, in one process: clang's front
// end, the pipeline (a constant, or a model's choice through a runner, as
// mlbridge-phase-service runs them), then clang's code generation at the
// command's level (docs/phase-ordering.md#deployment-in-a-build).
//
//   mlbridge-pipeline-clang (--pipeline TEXT | --runner CONFIG
//       [--max-steps N] [--no-baseline] [--stats FILE]) -- CLANG-ARGS...
//
// Everything after `--` is clang's command line (with --driver-mode=g++,
// clang++'s). clang's own driver plans the jobs. A -cc1 job that compiles
// one C or C++ source to an object at -O1 or above, with nothing the
// pipeline would drop (sanitizers, profiles, coverage, pass plugins,
// embedded bitcode), runs here through the pipeline; every other -cc1 job
// runs as clang-19 runs it (in this process); other jobs (the assembler,
// the linker) are clang's. A pipeline or a runner that fails leaves the
// unit to default<Oz> (tools/common/PhaseDeployment.h), and anything else
// failing in the session leaves it to clang's own pipeline for the level: a
// build never breaks because of the model. The session takes clang's module
// as it is, so with `--pipeline 'default<Oz>'` every object is plain
// `clang-19 -Oz`'s, byte for byte.
//
// Exit status: clang's; 2 for a usage error of the options before `--`.
//
//===----------------------------------------------------------------------===//

#include "common/CommandLine.h"
#include "common/PhaseDeployment.h"
#include "mlbridge/RunnerConfig.h"
#include "mlbridge/llvm/PhaseOrdering.h"

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/Basic/LangStandard.h"
#include "clang/CodeGen/BackendUtil.h"
#include "clang/CodeGen/CodeGenAction.h"
#include "clang/Driver/Compilation.h"
#include "clang/Driver/Driver.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/TextDiagnosticBuffer.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/FrontendTool/Utils.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

using namespace mlbridge;

namespace {

constexpr const char *Tool = "mlbridge-pipeline-clang";
constexpr int ExitFailure = 1, ExitUsage = 2;

constexpr const char *Usage =
    "usage: mlbridge-pipeline-clang --pipeline TEXT -- CLANG-ARGS...\n"
    "       mlbridge-pipeline-clang --runner CONFIG [--max-steps N] "
    "[--no-baseline]\n"
    "                               [--stats FILE] -- CLANG-ARGS...\n"
    "\n"
    "clang-19 (" MLBRIDGE_CLANG_PATH ") with CLANG-ARGS; each compilation\n"
    "of a C or C++ source to an object runs the pipeline between clang's\n"
    "front end and its code generation, in this process.\n"
    "\n"
    "  --pipeline TEXT   a constant pipeline (opt -passes= syntax; each\n"
    "                    default<L> is clang -L's pipeline)\n"
    "  --runner CONFIG   a model choosing the service's actions\n"
    "                    (docs/runner-config.md), e.g. aot:model.so\n"
    "  --max-steps N     at most N actions (default 32)\n"
    "  --no-baseline     skip the -Oz run that computes the observation's\n"
    "                    baseline_instcount (then 0), for models that do\n"
    "                    not read it\n"
    "  --stats FILE      append each unit's statistics record (one JSON\n"
    "                    line, docs/run-stats.md)\n"
    "  --version, --help (before --)\n";

struct Options {
  tools::DeploymentPlan Plan;
  bool NoBaseline = false;
  /// Index in argv of clang's first argument.
  int ClangArgs = 0;
};

int usage(const std::string &Why) {
  std::fprintf(stderr, "%s: error: %s (see %s --help)\n", Tool, Why.c_str(),
               Tool);
  return ExitUsage;
}

/// Parses the options before `--` into \p O; "" when valid, else why not.
std::string parseArgs(int Argc, char **Argv, Options &O) {
  std::string Runner;
  std::optional<std::string> Pipeline, MaxSteps;
  int I = 1;
  for (; I < Argc; ++I) {
    if (std::string_view(Argv[I]) == "--") {
      ++I;
      break;
    }
    const tools::Argument Split = tools::splitArgument(Argv[I]);
    std::string_view Arg = Split.Name, Value = Split.Value;
    const bool Inline = Split.Inline;
    auto Takes = [&]() -> std::optional<std::string> {
      if (!Inline) {
        if (I + 1 >= Argc)
          return std::nullopt;
        Value = Argv[++I];
      }
      return std::string(Value);
    };
    std::optional<std::string> Taken;
    if (Arg == "--no-baseline" && !Inline) {
      O.NoBaseline = true;
      continue;
    }
    if (Arg != "--runner" && Arg != "--pipeline" && Arg != "--max-steps" &&
        Arg != "--stats")
      return "unknown argument '" + std::string(Argv[I]) +
             "' (clang's arguments go after --)";
    if (!(Taken = Takes()))
      return std::string(Arg) + " needs a value";
    if (Arg == "--runner")
      Runner = *Taken;
    else if (Arg == "--pipeline")
      Pipeline = *Taken;
    else if (Arg == "--max-steps")
      MaxSteps = *Taken;
    else
      O.Plan.Stats = *Taken;
  }
  O.ClangArgs = I;
  if (I > Argc || std::string_view(Argv[I - 1]) != "--")
    return "give clang's arguments after --";
  if (Pipeline.has_value() == !Runner.empty())
    return "give exactly one of --pipeline TEXT and --runner CONFIG";
  if (Pipeline) {
    if (MaxSteps || O.NoBaseline || !O.Plan.Stats.empty())
      return "--pipeline takes no --max-steps, --no-baseline or --stats";
    if (Pipeline->empty())
      return "--pipeline needs a pipeline";
    O.Plan.Pipeline = *Pipeline;
    return "";
  }
  Expected<RunnerConfig> Config = RunnerConfig::parse(Runner);
  if (!Config)
    return Config.error().message();
  O.Plan.Runner = std::move(*Config);
  if (MaxSteps) {
    std::optional<int64_t> Count = tools::parseCount(*MaxSteps);
    if (!Count)
      return "--max-steps needs a whole number, got '" + *MaxSteps + "'";
    O.Plan.MaxSteps = *Count;
  }
  return "";
}

/// Whether the -cc1 job of \p Clang is one this tool optimises: one C or
/// C++ source to an object, optimised, with nothing clang's pipeline adds
/// that the chosen one would lack.
bool takesPipeline(const clang::CompilerInstance &Clang) {
  const clang::FrontendOptions &F = Clang.getFrontendOpts();
  const clang::CodeGenOptions &CG = Clang.getCodeGenOpts();
  const clang::LangOptions &Lang = Clang.getLangOpts();
  if (F.ProgramAction != clang::frontend::EmitObj || F.Inputs.size() != 1 ||
      !F.Inputs[0].isFile())
    return false;
  clang::InputKind Kind = F.Inputs[0].getKind();
  if (Kind.getFormat() != clang::InputKind::Source ||
      (Kind.getLanguage() != clang::Language::C &&
       Kind.getLanguage() != clang::Language::CXX))
    return false;
  return CG.OptimizationLevel > 0 && !CG.DisableLLVMPasses &&
         Lang.Sanitize.empty() && !CG.hasProfileInstr() &&
         !CG.hasProfileIRUse() && !CG.hasProfileClangUse() &&
         CG.SampleProfileFile.empty() && CG.CoverageNotesFile.empty() &&
         CG.CoverageDataFile.empty() && !CG.PrepareForLTO &&
         !CG.PrepareForThinLTO && CG.PassPlugins.empty() &&
         CG.PassBuilderCallbacks.empty() &&
         CG.getEmbedBitcode() == clang::CodeGenOptions::Embed_Off &&
         !CG.hasSanitizeCoverage() && !CG.hasSanitizeBinaryMetadata() &&
         CG.MemoryProfileOutput.empty() && CG.MemoryProfileUsePath.empty();
}

/// Passes the job's -mllvm options to LLVM, as clang's cc1 does.
bool parseLLVMArgs(const clang::CompilerInstance &Clang) {
  const std::vector<std::string> &Args = Clang.getFrontendOpts().LLVMArgs;
  if (Args.empty())
    return true;
  std::vector<const char *> Argv{"clang (LLVM option parsing)"};
  for (const std::string &A : Args)
    Argv.push_back(A.c_str());
  return llvm::cl::ParseCommandLineOptions(static_cast<int>(Argv.size()),
                                           Argv.data(), "", &llvm::errs());
}

/// Reports what code generation diagnoses about the module, as clang does
/// for a bitcode input: errors and warnings on stderr; errors counted.
class BackendReporter final : public llvm::DiagnosticHandler {
public:
  explicit BackendReporter(unsigned &Errors) : Errors(Errors) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo &DI) override {
    const char *Severity = nullptr;
    if (DI.getSeverity() == llvm::DS_Error) {
      ++Errors;
      Severity = "error";
    } else if (DI.getSeverity() == llvm::DS_Warning) {
      Severity = "warning";
    }
    if (!Severity)
      return true;
    std::string Text;
    llvm::raw_string_ostream OS(Text);
    llvm::DiagnosticPrinterRawOStream Printer(OS);
    DI.print(Printer);
    llvm::errs() << Tool << ": " << Severity << ": " << Text << "\n";
    return true;
  }

private:
  unsigned &Errors;
};

/// A module with the context it was made in.
struct ModuleInContext {
  std::unique_ptr<llvm::LLVMContext> Context;
  std::unique_ptr<llvm::Module> M;
};

/// The module of the job's front end (clang's at the job's level, before
/// any pass), or nothing when the front end failed (it said why).
std::optional<ModuleInContext> frontEnd(clang::CompilerInstance &Clang) {
  Clang.getCodeGenOpts().DisableLLVMPasses = true;
  ModuleInContext Out{std::make_unique<llvm::LLVMContext>(), nullptr};
  clang::EmitLLVMOnlyAction Front(Out.Context.get());
  if (!Clang.ExecuteAction(Front))
    return std::nullopt;
  Out.M = Front.takeModule();
  if (!Out.M)
    return std::nullopt;
  return Out;
}

/// Optimises \p Unit as \p O says, by a session that takes the module as
/// it is (its use-list order and names are clang's, so default<Oz> gives
/// clang's -Oz object byte for byte). Whether clang's own pipeline must run
/// instead: the session failed, and the module is as the front end made it.
/// An error when the session could not take the module at all.
Expected<bool> optimise(const Options &O, ModuleInContext &Unit,
                        const std::string &Name) {
  phase::SessionOptions SO;
  SO.ComputeBaseline = O.Plan.Runner.has_value() && !O.NoBaseline;
  Expected<std::unique_ptr<phase::Session>> S = phase::Session::create(SO);
  if (!S)
    return S.takeError();
  if (Error E = (*S)->adopt(std::move(Unit.Context), std::move(Unit.M), Name))
    return E;
  bool ClangPipeline = false;
  if (Error E = tools::optimiseLoaded(O.Plan, **S, Tool)) {
    std::fprintf(stderr, "%s: %s; clang's own pipeline for %s\n", Tool,
                 E.message().c_str(), Name.c_str());
    ClangPipeline = true;
    if (Error Reset = (*S)->reset())
      return Reset;
  }
  std::tie(Unit.Context, Unit.M) = (*S)->release();
  return ClangPipeline;
}

/// Code generation of \p Unit to the job's output; with \p ClangPipeline,
/// clang's own pipeline for the level runs first.
int backEnd(clang::CompilerInstance &Clang, ModuleInContext &Unit,
            bool ClangPipeline) {
  unsigned Errors = 0;
  Unit.Context->setDiagnosticHandler(std::make_unique<BackendReporter>(Errors));
  clang::CodeGenOptions &CG = Clang.getCodeGenOpts();
  CG.DisableLLVMPasses = !ClangPipeline;
  const clang::FrontendOptions &F = Clang.getFrontendOpts();
  std::unique_ptr<llvm::raw_pwrite_stream> OS = Clang.createDefaultOutputFile(
      /*Binary=*/true, F.Inputs[0].getFile(), "o");
  if (!OS)
    return ExitFailure;
  clang::EmitBackendOutput(Clang.getDiagnostics(), Clang.getHeaderSearchOpts(),
                           CG, Clang.getTargetOpts(), Clang.getLangOpts(),
                           Clang.getTarget().getDataLayoutString(),
                           Unit.M.get(), clang::Backend_EmitObj,
                           Clang.getFileManager().getVirtualFileSystemPtr(),
                           std::move(OS));
  bool Failed = Errors > 0 || Clang.getDiagnostics().hasErrorOccurred();
  Clang.clearOutputFiles(/*EraseFiles=*/Failed);
  return Failed ? ExitFailure : 0;
}

/// The unit of \p Clang through the pipeline: front end, pipeline, code
/// generation.
int compileUnit(const Options &O, clang::CompilerInstance &Clang) {
  if (!parseLLVMArgs(Clang))
    return ExitFailure;
  std::string Name = Clang.getFrontendOpts().Inputs[0].getFile().str();
  std::optional<ModuleInContext> Unit = frontEnd(Clang);
  if (!Unit)
    return ExitFailure;
  Expected<bool> ClangPipeline = optimise(O, *Unit, Name);
  if (!ClangPipeline) {
    llvm::errs() << Tool << ": error: " << ClangPipeline.error().message()
                 << "\n";
    return ExitFailure;
  }
  return backEnd(Clang, *Unit, *ClangPipeline);
}

/// A job clang's driver runs in this process: a -cc1 job, here (through the
/// pipeline when it takes one); any other (-cc1as) by the clang program.
int runJob(const Options &O, llvm::SmallVectorImpl<const char *> &Argv) {
  if (Argv.size() < 2 || llvm::StringRef(Argv[1]) != "-cc1") {
    llvm::SmallVector<llvm::StringRef, 64> Args(Argv.begin(), Argv.end());
    std::string Why;
    int Status = llvm::sys::ExecuteAndWait(MLBRIDGE_CLANG_PATH, Args,
                                           std::nullopt, {}, 0, 0, &Why);
    if (Status < 0)
      llvm::errs() << Tool << ": error: " << MLBRIDGE_CLANG_PATH << ": " << Why
                   << "\n";
    return Status < 0 ? ExitFailure : Status;
  }
  auto Clang = std::make_unique<clang::CompilerInstance>();
  // As clang's cc1: what parsing the arguments diagnoses waits for the
  // instance's own diagnostics engine.
  llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs> IDs(new clang::DiagnosticIDs);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> DiagOpts(
      new clang::DiagnosticOptions);
  auto *Buffer = new clang::TextDiagnosticBuffer;
  clang::DiagnosticsEngine ParseDiags(IDs, &*DiagOpts, Buffer);
  bool Parsed = clang::CompilerInvocation::CreateFromArgs(
      Clang->getInvocation(), llvm::ArrayRef(Argv).slice(2), ParseDiags,
      Argv[0]);
  Clang->createDiagnostics();
  if (!Clang->hasDiagnostics())
    return ExitFailure;
  Buffer->FlushDiagnostics(Clang->getDiagnostics());
  int Status = ExitFailure; // arguments that do not parse: it said why
  if (Parsed && takesPipeline(*Clang))
    Status = compileUnit(O, *Clang);
  else if (Parsed)
    Status = clang::ExecuteCompilerInvocation(Clang.get()) ? 0 : ExitFailure;
  Clang->getDiagnosticClient().finish();
  return Status;
}

} // namespace

int main(int Argc, char **Argv) {
  for (int I = 1; I < Argc && std::string_view(Argv[I]) != "--"; ++I) {
    std::string_view Arg = Argv[I];
    if (Arg == "--help" || Arg == "-h") {
      std::fputs(Usage, stdout);
      return 0;
    }
    if (Arg == "--version") {
      std::printf("%s %s\n", Tool, MLBRIDGE_VERSION_STRING);
      return 0;
    }
  }
  Options O;
  if (std::string Why = parseArgs(Argc, Argv, O); !Why.empty())
    return usage(Why);

  if (!O.Plan.Runner) {
    // A pipeline that does not parse is the command's mistake, not a unit's.
    if (Error E = phase::checkPipeline(O.Plan.Pipeline))
      return usage(E.message());
  }
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  llvm::InitializeAllAsmParsers();

  // clang's command line, as the clang program sees it: its path first,
  // response files expanded.
  llvm::SmallVector<const char *, 256> Args{MLBRIDGE_CLANG_PATH};
  Args.append(Argv + O.ClangArgs, Argv + Argc);
  llvm::BumpPtrAllocator Alloc;
  llvm::cl::ExpansionContext Expansion(Alloc, llvm::cl::TokenizeGNUCommandLine);
  if (llvm::Error E = Expansion.expandResponseFiles(Args)) {
    llvm::errs() << Tool << ": error: " << llvm::toString(std::move(E)) << "\n";
    return ExitFailure;
  }

  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> DiagOpts =
      clang::CreateAndPopulateDiagOpts(Args);
  auto *Printer = new clang::TextDiagnosticPrinter(llvm::errs(), &*DiagOpts);
  clang::DiagnosticsEngine Diags(
      llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs>(new clang::DiagnosticIDs),
      &*DiagOpts, Printer);
  clang::ProcessWarningOptions(Diags, *DiagOpts, /*ReportDiags=*/false);

  clang::driver::Driver Driver(MLBRIDGE_CLANG_PATH,
                               llvm::sys::getDefaultTargetTriple(), Diags);
  auto RunJob = [&O](llvm::SmallVectorImpl<const char *> &JobArgv) {
    return runJob(O, JobArgv);
  };
  Driver.CC1Main = RunJob;
  // A job that crashes fails alone, as in clang.
  llvm::CrashRecoveryContext::Enable();
  std::unique_ptr<clang::driver::Compilation> C(Driver.BuildCompilation(Args));
  int Status = ExitFailure;
  if (C && !C->containsError()) {
    // clang runs -cc1 jobs in a process of their own when a command has more
    // than one job (compiling and linking at once); here each runs in this
    // one, so that each unit takes the pipeline.
    for (clang::driver::Command &Job : C->getJobs())
      if (!Job.getArguments().empty() &&
          llvm::StringRef(Job.getArguments()[0]) == "-cc1")
        Job.InProcess = true;
    llvm::SmallVector<std::pair<int, const clang::driver::Command *>, 4>
        Failing;
    Status = Driver.ExecuteCompilation(*C, Failing);
    // As clang: the first failing command's status when the run's is 0.
    for (const auto &Failed : Failing)
      if (Status == 0)
        Status = Failed.first;
  }
  Diags.getClient()->finish();
  return Status < 0 ? ExitFailure : Status;
}

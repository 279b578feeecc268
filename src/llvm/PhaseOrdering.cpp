//===- llvm/PhaseOrdering.cpp - A phase-ordering session ------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Each load gets a fresh LLVMContext (types and constants of earlier modules
// do not pile up in a long-lived service). The module steps run on is the
// one parsed, with the use-list order its bitcode recorded, so default<Oz>
// through the service is clang -Oz's; within the context the pristine
// module, the snapshots and what a reset or a rollback makes current are
// copies made by llvm::CloneModule (cheaper than parsing the bitcode again,
// and it does not rename struct types), whose use lists may be in another
// order. Each step runs on fresh analysis managers, so no cached analysis
// outlives a module it was computed for.
//
// Rolling a failed step back does not need a copy per step (a third of an
// instcombine step on a large module): LLVM's passes are deterministic, so
// the state before the step is the newest copy held (the base: the module as
// loaded, a snapshot, a restored slot or a checkpoint) with the journal of
// pipelines applied since replayed on it. Failed steps are rare; the replay
// is bounded by taking a checkpoint once the journal's pass time passes
// SessionOptions::MaxReplayMillis.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/PhaseOrdering.h"

#include "PhasePipelines.h"
#include "compat/StandardInstrumentations.h"
#include "support/ReadFile.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace mlbridge::phase {

namespace {

/// Longest error text a failed step reports (verifier output can be huge).
constexpr size_t MaxMessageBytes = 2048;
/// Baselines remembered (by the loaded bytes) before the cache starts over.
constexpr size_t MaxCachedBaselines = 4096;

std::string truncated(std::string Text) {
  while (!Text.empty() && (Text.back() == '\n' || Text.back() == ' '))
    Text.pop_back();
  if (Text.size() > MaxMessageBytes) {
    Text.resize(MaxMessageBytes);
    Text += "...";
  }
  return Text;
}

/// Records the first error diagnostic and swallows every diagnostic, so
/// LLVM neither prints nor exits (its default handler exits on errors).
class CapturingHandler final : public llvm::DiagnosticHandler {
public:
  explicit CapturingHandler(std::string &FirstError) : FirstError(FirstError) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo &DI) override {
    if (DI.getSeverity() == llvm::DS_Error && FirstError.empty()) {
      llvm::raw_string_ostream OS(FirstError);
      llvm::DiagnosticPrinterRawOStream DP(OS);
      DI.print(DP);
      if (FirstError.empty())
        FirstError = "an error diagnostic";
    }
    return true;
  }

private:
  std::string &FirstError;
};

/// The TargetMachine for \p M's triple and relocation model, or null (no
/// triple, or a target this LLVM lacks: passes then use target-independent
/// defaults).
std::unique_ptr<llvm::TargetMachine> targetFor(const llvm::Module &M) {
  static std::once_flag Once;
  std::call_once(Once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
  });
  const std::string &Triple = M.getTargetTriple();
  if (Triple.empty())
    return nullptr;
  std::string Ignored;
  const llvm::Target *T = llvm::TargetRegistry::lookupTarget(Triple, Ignored);
  if (!T)
    return nullptr;
  // clang's relocation model, which the module records: passes ask the
  // target whether code is position independent (relative lookup tables).
  std::optional<llvm::Reloc::Model> Reloc;
  if (M.getPICLevel() != llvm::PICLevel::NotPIC)
    Reloc = llvm::Reloc::PIC_;
  return std::unique_ptr<llvm::TargetMachine>(
      T->createTargetMachine(Triple, "", "", llvm::TargetOptions(), Reloc));
}

/// Runs a module pipeline on \p M with fresh analysis managers
/// (PhasePipelines.h: each default<L> element is clang -L's pipeline).
Error runTextual(llvm::Module &M, llvm::TargetMachine *TM,
                 std::string_view Pipeline) {
  // Declared in this order so that the module analyses go first (opt's).
  llvm::LoopAnalysisManager LAM;
  llvm::FunctionAnalysisManager FAM;
  llvm::CGSCCAnalysisManager CGAM;
  llvm::ModuleAnalysisManager MAM;
  llvm::PassInstrumentationCallbacks PIC;
  llvm::StandardInstrumentations SI(M.getContext(), /*DebugLogging=*/false);
  compat::registerCallbacks(SI, PIC, MAM, FAM);
  llvm::PassBuilder PB(TM, llvm::PipelineTuningOptions(), std::nullopt, &PIC);
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  llvm::ModulePassManager MPM;
  llvm::StringRef Text(Pipeline.data(), Pipeline.size());
  if (Error E = buildPipeline(Text, TM, &PIC, MPM))
    return makeError(ErrorCode::Unsupported, E.message());
  MPM.run(M, MAM);
  return Error::success();
}

int64_t runOz(llvm::Module &M, llvm::TargetMachine *TM) {
  Error E = runTextual(M, TM, "default<Oz>");
  (void)E; // the default pipeline always parses
  return autophase::instructionCount(M);
}

/// Writes \p M as bitcode with its use-list order, as clang -emit-llvm and
/// opt do: the order in which a value's uses (a block's predecessors) are
/// read back steers code generation, so without it the same IR compiles to
/// different code than the module would in one clang process.
void writeModule(const llvm::Module &M, llvm::raw_ostream &OS) {
  llvm::WriteBitcodeToFile(M, OS, /*ShouldPreserveUseListOrder=*/true);
}

/// The verifier's complaint about \p M, or "" when it is valid.
std::string verifierErrors(const llvm::Module &M) {
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  if (!llvm::verifyModule(M, &OS))
    return "";
  OS.flush();
  return Text.empty() ? std::string("the verifier rejects it") : Text;
}

} // namespace

struct Session::Impl {
  /// A copy of the state that is never modified (in a snapshot slot, or a
  /// rollback's base); shared, so that a slot overwritten by a later
  /// snapshot stays alive as long as it is the base.
  struct Snapshot {
    std::shared_ptr<const llvm::Module> M;
    int64_t Steps = 0;
  };

  /// A loaded module with everything derived from it. Members are destroyed
  /// in reverse order: the modules before their context.
  struct Loaded {
    std::unique_ptr<llvm::LLVMContext> Ctx;
    std::string FirstError; ///< Filled by the context's diagnostic handler.
    std::unique_ptr<llvm::TargetMachine> TM;
    std::shared_ptr<const llvm::Module> Pristine;
    std::unique_ptr<llvm::Module> Current;
    std::array<Snapshot, NumSnapshotSlots> Slots;
    /// What Rollback::Previous replays the journal on.
    Snapshot Base;
    /// Pipelines applied to Base's copy since, in order, all successful.
    std::vector<std::string> Journal;
    /// Pass time the journal took, in milliseconds.
    double JournalMillis = 0;
    std::string Name;
    int64_t Initial = 0;
    int64_t Baseline = 0;
    int64_t Steps = 0;

    /// Makes \p From (a copy of which is current, at \p FromSteps) the base
    /// of the next rollback, with an empty journal.
    void rebase(std::shared_ptr<const llvm::Module> From, int64_t FromSteps) {
      Base = {std::move(From), FromSteps};
      Journal.clear();
      JournalMillis = 0;
    }
  };

  SessionOptions Options;
  std::unique_ptr<Loaded> L;
  autophase::FeatureVector Features{};
  int64_t Count = 0;
  std::map<std::pair<size_t, size_t>, int64_t> Baselines;

  /// Runs \p Pipeline (called \p What in errors) on the current module;
  /// verifies the result and rolls back when it is broken.
  Error step(std::string_view Pipeline, const std::string &What) {
    auto Start = std::chrono::steady_clock::now();
    std::string Why = run(Pipeline);
    if (Why.empty()) {
      ++L->Steps;
      if (Options.OnFailure == Rollback::Previous)
        journal(Pipeline, std::chrono::steady_clock::now() - Start);
      refresh();
      return Error::success();
    }
    const char *Where = "back to the state before it";
    if (Options.OnFailure == Rollback::Pristine) {
      L->Current = llvm::CloneModule(*L->Pristine);
      L->Steps = 0;
      L->rebase(L->Pristine, 0);
      Where = "back to the module as loaded";
    } else if (std::string Replay = replay(); !Replay.empty()) {
      Where = "back to its last copy: replaying the steps since failed";
      Why += "; replay: " + Replay;
    }
    refresh();
    return makeError(ErrorCode::Broken, What, " broke module '", L->Name, "' (",
                     Where, "): ", truncated(Why));
  }

  /// Runs \p Pipeline on the current module: "" when it succeeded and left
  /// a valid module, else why not (the module is then in any state).
  std::string run(std::string_view Pipeline) {
    L->FirstError.clear();
    std::string Why;
    if (Error E = runTextual(*L->Current, L->TM.get(), Pipeline))
      Why = E.message();
    else if (!L->FirstError.empty())
      Why = L->FirstError;
    else
      Why = verifierErrors(*L->Current);
    L->FirstError.clear();
    return Why;
  }

  /// Records a successful step of \p Took; takes a checkpoint when the
  /// journal would take longer than allowed to replay.
  void journal(std::string_view Pipeline,
               std::chrono::steady_clock::duration Took) {
    L->Journal.emplace_back(Pipeline);
    L->JournalMillis += std::chrono::duration<double, std::milli>(Took).count();
    if (L->JournalMillis > Options.MaxReplayMillis)
      L->rebase(llvm::CloneModule(*L->Current), L->Steps);
  }

  /// Rebuilds the state before the failed step: a copy of the base with the
  /// journal replayed. "" on success; else why the replay failed, and the
  /// module is the base's copy at its step count.
  std::string replay() {
    L->Current = llvm::CloneModule(*L->Base.M);
    for (const std::string &Pipeline : L->Journal) {
      if (std::string Why = run(Pipeline); !Why.empty()) {
        L->Current = llvm::CloneModule(*L->Base.M);
        L->Steps = L->Base.Steps;
        L->Journal.clear();
        L->JournalMillis = 0;
        return Why;
      }
    }
    return "";
  }

  /// Makes \p M, made in \p NewL's context and read from \p Bytes (the
  /// baseline's copy is parsed from them; unused without a baseline), the
  /// current module. On error (naming \p Name) nothing changes.
  Error install(std::unique_ptr<Loaded> NewL, std::unique_ptr<llvm::Module> M,
                std::string_view Bytes, const std::string &Name) {
    if (std::string Why = verifierErrors(*M); !Why.empty())
      return makeError(ErrorCode::InvalidArgument, "cannot load module '", Name,
                       "': invalid IR: ", truncated(Why));
    if (!NewL->FirstError.empty())
      return makeError(ErrorCode::InvalidArgument, "cannot load module '", Name,
                       "': ", truncated(NewL->FirstError));
    if (Options.UseTarget)
      NewL->TM = targetFor(*M);
    NewL->Name = Name;
    NewL->Pristine = llvm::CloneModule(*M);
    NewL->Current = std::move(M);
    NewL->rebase(NewL->Pristine, 0);
    NewL->Initial = autophase::instructionCount(*NewL->Pristine);

    std::pair<size_t, size_t> Key{std::hash<std::string_view>()(Bytes),
                                  Bytes.size()};
    auto Cached = Baselines.find(Key);
    if (!Options.ComputeBaseline) {
      NewL->Baseline = 0;
    } else if (Cached != Baselines.end()) {
      NewL->Baseline = Cached->second;
    } else {
      // Parsed again (in a context of its own: no renamed types), not
      // cloned: default<Oz> on the use-list order clang -Oz would see.
      llvm::LLVMContext BaselineCtx;
      llvm::SMDiagnostic Diag;
      llvm::MemoryBufferRef Buffer(llvm::StringRef(Bytes.data(), Bytes.size()),
                                   Name);
      std::unique_ptr<llvm::Module> Copy =
          llvm::parseIR(Buffer, Diag, BaselineCtx);
      NewL->Baseline = Copy ? runOz(*Copy, NewL->TM.get()) : 0;
      if (Baselines.size() >= MaxCachedBaselines)
        Baselines.clear();
      Baselines.emplace(Key, NewL->Baseline);
    }
    NewL->FirstError.clear();
    L = std::move(NewL);
    refresh();
    return Error::success();
  }

  /// Recomputes the observation of the current module.
  void refresh() {
    Features = autophase::computeFeatures(*L->Current);
    Count = Features[autophase::index(autophase::Feature::TotalInsts)];
  }
  Error needModule() const {
    if (!L)
      return makeError(ErrorCode::InvalidArgument, "no module is loaded");
    return Error::success();
  }
  static Error checkSlot(int64_t Slot) {
    if (Slot < 0 || Slot >= static_cast<int64_t>(NumSnapshotSlots))
      return makeError(ErrorCode::InvalidArgument, "no snapshot slot ",
                       std::to_string(Slot), " (0..",
                       std::to_string(NumSnapshotSlots - 1), ")");
    return Error::success();
  }
};

Session::Session(std::unique_ptr<Impl> I) : P(std::move(I)) {}
Session::~Session() = default;

Expected<std::unique_ptr<Session>> Session::create(SessionOptions Options) {
  if (Error E = checkActions())
    return E;
  auto I = std::make_unique<Impl>();
  I->Options = Options;
  return std::unique_ptr<Session>(new Session(std::move(I)));
}

Error Session::loadFile(const std::string &Path) {
  Expected<std::string> Bytes =
      readRegularFile(Path, P->Options.MaxInputBytes, "module");
  if (!Bytes)
    return Bytes.takeError();
  return loadBytes(*Bytes, Path);
}

Error Session::loadBytes(std::string_view Bytes, const std::string &Name) {
  if (Bytes.size() > P->Options.MaxInputBytes)
    return makeError(ErrorCode::TooLarge, "cannot load module '", Name,
                     "': ", std::to_string(Bytes.size()),
                     " bytes, more than the limit of ",
                     std::to_string(P->Options.MaxInputBytes));
  auto L = std::make_unique<Impl::Loaded>();
  L->Ctx = std::make_unique<llvm::LLVMContext>();
  L->Ctx->setDiagnosticHandler(
      std::make_unique<CapturingHandler>(L->FirstError));
  llvm::SMDiagnostic Diag;
  llvm::MemoryBufferRef Buffer(llvm::StringRef(Bytes.data(), Bytes.size()),
                               Name);
  // Steps run on the module as parsed, with the use-list order its bitcode
  // recorded (a block's predecessors, in the order clang -Oz would see
  // them); the pristine copy is a clone, only reset and rollback use it.
  std::unique_ptr<llvm::Module> Parsed = llvm::parseIR(Buffer, Diag, *L->Ctx);
  if (!Parsed) {
    std::string Where = Diag.getLineNo() > 0
                            ? std::to_string(Diag.getLineNo()) + ":" +
                                  std::to_string(Diag.getColumnNo() + 1) + ": "
                            : "";
    return makeError(ErrorCode::InvalidArgument, "cannot load module '", Name,
                     "': not valid LLVM bitcode or IR: ", Where,
                     Diag.getMessage().str());
  }
  return P->install(std::move(L), std::move(Parsed), Bytes, Name);
}

Error Session::adopt(std::unique_ptr<llvm::LLVMContext> Context,
                     std::unique_ptr<llvm::Module> M, const std::string &Name) {
  if (!Context || !M || &M->getContext() != Context.get())
    return makeError(ErrorCode::InvalidArgument, "cannot adopt module '", Name,
                     "': no module, or not made in the context given");
  auto L = std::make_unique<Impl::Loaded>();
  L->Ctx = std::move(Context);
  L->Ctx->setDiagnosticHandler(
      std::make_unique<CapturingHandler>(L->FirstError));
  // The baseline's copy is parsed from bitcode, as a file's would be.
  std::string Bytes;
  if (P->Options.ComputeBaseline) {
    llvm::raw_string_ostream OS(Bytes);
    writeModule(*M, OS);
    OS.flush();
  }
  return P->install(std::move(L), std::move(M), Bytes, Name);
}

std::pair<std::unique_ptr<llvm::LLVMContext>, std::unique_ptr<llvm::Module>>
Session::release() {
  if (!P->L)
    return {};
  std::unique_ptr<llvm::LLVMContext> Context = std::move(P->L->Ctx);
  std::unique_ptr<llvm::Module> M = std::move(P->L->Current);
  // The copies go while their context is alive (now the caller's).
  P->L.reset();
  P->Features = {};
  P->Count = 0;
  // Its handler wrote into the state just dropped.
  Context->setDiagnosticHandler(std::make_unique<llvm::DiagnosticHandler>());
  return {std::move(Context), std::move(M)};
}

bool Session::hasModule() const { return P->L != nullptr; }

const std::string &Session::moduleName() const {
  static const std::string None;
  return P->L ? P->L->Name : None;
}

Error Session::apply(int64_t Index) {
  if (Error E = P->needModule())
    return E;
  const std::vector<Action> &Table = actions();
  if (Index < 0 || Index >= static_cast<int64_t>(Table.size()))
    return makeError(ErrorCode::InvalidArgument, "no action #",
                     std::to_string(Index), " (0..",
                     std::to_string(Table.size() - 1), ")");
  const Action &A = Table[static_cast<size_t>(Index)];
  return P->step(A.Pipeline, "action #" + std::to_string(Index) + " '" +
                                 std::string(A.Name) + "'");
}

Error Session::applyPipeline(std::string_view Pipeline) {
  if (Error E = P->needModule())
    return E;
  llvm::ModulePassManager MPM;
  llvm::StringRef Text(Pipeline.data(), Pipeline.size());
  if (Error E = buildPipeline(Text, P->L->TM.get(), nullptr, MPM))
    return E;
  return P->step(Pipeline, "pipeline '" + Text.str() + "'");
}

Error Session::reset() {
  if (Error E = P->needModule())
    return E;
  P->L->Current = llvm::CloneModule(*P->L->Pristine);
  P->L->Steps = 0;
  P->L->rebase(P->L->Pristine, 0);
  P->refresh();
  return Error::success();
}

Error Session::snapshot(int64_t Slot) {
  if (Error E = P->needModule())
    return E;
  if (Error E = Impl::checkSlot(Slot))
    return E;
  Impl::Snapshot &S = P->L->Slots[static_cast<size_t>(Slot)];
  S.M = llvm::CloneModule(*P->L->Current);
  S.Steps = P->L->Steps;
  P->L->rebase(S.M, S.Steps); // the copy is the state: nothing to replay
  return Error::success();
}

Error Session::restore(int64_t Slot) {
  if (Error E = P->needModule())
    return E;
  if (Error E = Impl::checkSlot(Slot))
    return E;
  const Impl::Snapshot &S = P->L->Slots[static_cast<size_t>(Slot)];
  if (!S.M)
    return makeError(ErrorCode::InvalidArgument, "snapshot slot ",
                     std::to_string(Slot), " is empty");
  P->L->Current = llvm::CloneModule(*S.M);
  P->L->Steps = S.Steps;
  P->L->rebase(S.M, S.Steps);
  P->refresh();
  return Error::success();
}

Expected<std::string> Session::bitcode() const {
  if (Error E = P->needModule())
    return E;
  std::string Bytes;
  llvm::raw_string_ostream OS(Bytes);
  writeModule(*P->L->Current, OS);
  OS.flush();
  return Bytes;
}

Error Session::writeBitcode(const std::string &Path) const {
  if (Error E = P->needModule())
    return E;
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC, llvm::sys::fs::OF_None);
  if (EC)
    return makeError(ErrorCode::IO, "cannot write '", Path,
                     "': ", EC.message());
  writeModule(*P->L->Current, OS);
  OS.close();
  if (OS.has_error()) {
    std::string Why = OS.error().message();
    OS.clear_error();
    return makeError(ErrorCode::IO, "cannot write '", Path, "': ", Why);
  }
  return Error::success();
}

std::string Session::printIR() const {
  std::string Text;
  if (!P->L)
    return Text;
  llvm::raw_string_ostream OS(Text);
  P->L->Current->print(OS, nullptr);
  OS.flush();
  return Text;
}

const llvm::Module *Session::module() const {
  return P->L ? P->L->Current.get() : nullptr;
}

int64_t Session::instructionCount() const { return P->L ? P->Count : 0; }
int64_t Session::initialInstructionCount() const {
  return P->L ? P->L->Initial : 0;
}
int64_t Session::baselineInstructionCount() const {
  return P->L ? P->L->Baseline : 0;
}
int64_t Session::steps() const { return P->L ? P->L->Steps : 0; }
const autophase::FeatureVector &Session::features() const {
  return P->Features;
}

} // namespace mlbridge::phase

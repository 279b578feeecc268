//===- PhaseOrderingTest.cpp - The phase-ordering session -----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// phase::Session: loading bitcode (from bytes and files, with size caps and
// errors naming the file), actions shrinking the module, the default<Oz>
// baseline, invalid arguments changing nothing, snapshots, reset, writing
// bitcode back, and every action of the table running on a module.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/PhaseOrdering.h"

#include "PhaseTestSupport.h"
#include "llvm/PhasePipelines.h"
#include "llvm/compat/PassPipelines.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace mlbridge;
using namespace mlbridge::phase;

namespace {

std::unique_ptr<Session> newSession(SessionOptions Options = {}) {
  Expected<std::unique_ptr<Session>> S = Session::create(Options);
  EXPECT_TRUE(S) << S.error().toString();
  return S ? std::move(*S) : nullptr;
}

/// A session with LoopModule loaded from its bitcode.
std::unique_ptr<Session> loaded(SessionOptions Options = {}) {
  std::unique_ptr<Session> S = newSession(Options);
  std::string Bytes = phase_test::toBitcode(phase_test::LoopModule);
  EXPECT_FALSE(Bytes.empty());
  Error E = S->loadBytes(Bytes, "loop.bc");
  EXPECT_FALSE(E) << E.toString();
  return S;
}

/// The current module's IR with its local values unnamed (numbered). A
/// copy of a module starts its functions' name counters over, so the same
/// pass on a copy may number the names it makes differently (`%s.05` for
/// `%s.02`): the states are the same up to those names.
std::string anonymousIR(const Session &S) {
  std::unique_ptr<llvm::Module> M = llvm::CloneModule(*S.module());
  for (llvm::Function &F : *M) {
    for (llvm::Argument &A : F.args())
      A.setName("");
    for (llvm::BasicBlock &B : F) {
      B.setName("");
      for (llvm::Instruction &I : B)
        I.setName("");
    }
  }
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  M->print(OS, nullptr);
  return OS.str();
}

int64_t actionIndex(const char *Name) {
  Expected<size_t> I = findAction(Name);
  EXPECT_TRUE(I) << I.error().toString();
  return I ? static_cast<int64_t>(*I) : -1;
}

TEST(PhaseActions, TableIsUniqueAndParses) {
  Error E = checkActions();
  EXPECT_FALSE(E) << E.toString();
  std::set<std::string_view> Names;
  for (const Action &A : actions()) {
    EXPECT_TRUE(Names.insert(A.Name).second) << "duplicate " << A.Name;
    EXPECT_FALSE(A.Pipeline.empty()) << A.Name;
    // A textual instcombine verifies its fixpoint and, when one iteration
    // does not reach it, ends the process (LLVM 18 and later): never in the
    // table, where it is the one compat/PassPipelines.h names.
    std::string_view P = A.Pipeline;
    std::string_view InstCombine = MLBRIDGE_PASS_INSTCOMBINE;
    for (size_t At = P.find("instcombine"); At != std::string_view::npos;
         At = P.find("instcombine", At + 1)) {
      if (At == 0 || P[At - 1] != '-') {
        EXPECT_EQ(P.substr(At, InstCombine.size()), InstCombine) << A.Name;
        char After = At + InstCombine.size() < P.size()
                         ? P[At + InstCombine.size()]
                         : ')';
        EXPECT_TRUE(After == ',' || After == ')') << A.Name;
      }
    }
  }
  EXPECT_GE(actions().size(), 40u);
  EXPECT_EQ(actions()[defaultOzAction()].Name, "default<Oz>");
  for (const char *Name : {"instcombine", "sroa", "licm", "inline", "gvn"})
    EXPECT_TRUE(findAction(Name)) << Name;
  EXPECT_EQ(findAction("no-such-pass").error().code(),
            ErrorCode::InvalidArgument);
}

TEST(PhaseSession, LoadsBitcodeBytesAndComputesTheBaseline) {
  std::unique_ptr<Session> S = loaded();
  ASSERT_TRUE(S->hasModule());
  EXPECT_EQ(S->moduleName(), "loop.bc");
  EXPECT_EQ(S->steps(), 0);
  EXPECT_GT(S->initialInstructionCount(), 30);
  EXPECT_EQ(S->instructionCount(), S->initialInstructionCount());
  EXPECT_LT(S->baselineInstructionCount(), S->initialInstructionCount());
  EXPECT_GT(S->baselineInstructionCount(), 0);
  EXPECT_EQ(S->features()[autophase::index(autophase::Feature::TotalInsts)],
            S->instructionCount());
  EXPECT_EQ(S->features()[autophase::index(autophase::Feature::NumAllocaInst)],
            5);
}

TEST(PhaseSession, WithoutTheBaselineALoadRunsNoPipeline) {
  SessionOptions Options;
  Options.ComputeBaseline = false;
  std::unique_ptr<Session> S = loaded(Options);
  EXPECT_EQ(S->baselineInstructionCount(), 0);
  EXPECT_EQ(S->instructionCount(), S->initialInstructionCount());
  ASSERT_FALSE(S->apply(static_cast<int64_t>(defaultOzAction())));
  EXPECT_EQ(S->instructionCount(), loaded()->baselineInstructionCount());
}

TEST(PhaseSession, SroaAndInstcombineShrinkTheModule) {
  std::unique_ptr<Session> S = loaded();
  int64_t Initial = S->instructionCount();
  Error E = S->apply(actionIndex("sroa"));
  ASSERT_FALSE(E) << E.toString();
  int64_t AfterSroa = S->instructionCount();
  EXPECT_LT(AfterSroa, Initial);
  EXPECT_EQ(S->features()[autophase::index(autophase::Feature::NumAllocaInst)],
            0);
  E = S->apply(actionIndex("instcombine"));
  ASSERT_FALSE(E) << E.toString();
  EXPECT_LT(S->instructionCount(), AfterSroa); // the "add %r, 0" goes
  EXPECT_EQ(S->steps(), 2);
  EXPECT_EQ(S->initialInstructionCount(), Initial);
}

TEST(PhaseSession, TheOzActionReachesTheBaseline) {
  std::unique_ptr<Session> S = loaded();
  Error E = S->apply(static_cast<int64_t>(defaultOzAction()));
  ASSERT_FALSE(E) << E.toString();
  EXPECT_EQ(S->instructionCount(), S->baselineInstructionCount());
}

TEST(PhaseSession, InvalidArgumentsChangeNothing) {
  std::unique_ptr<Session> S = loaded();
  ASSERT_FALSE(S->apply(actionIndex("sroa")));
  std::string Before = S->printIR();
  int64_t Count = S->instructionCount();
  for (int64_t Bad : {int64_t(-1), static_cast<int64_t>(actions().size()),
                      int64_t(1) << 40}) {
    Error E = S->apply(Bad);
    EXPECT_EQ(E.code(), ErrorCode::InvalidArgument) << Bad;
    EXPECT_NE(E.message().find("no action #"), std::string::npos)
        << E.message();
  }
  EXPECT_EQ(S->snapshot(-1).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(S->snapshot(NumSnapshotSlots).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(S->restore(0).code(), ErrorCode::InvalidArgument); // empty
  EXPECT_EQ(S->printIR(), Before);
  EXPECT_EQ(S->instructionCount(), Count);
  EXPECT_EQ(S->steps(), 1);
}

TEST(PhaseSession, WithoutAModuleEverythingIsAnError) {
  std::unique_ptr<Session> S = newSession();
  EXPECT_FALSE(S->hasModule());
  EXPECT_EQ(S->apply(0).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(S->reset().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(S->snapshot(0).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(S->restore(0).code(), ErrorCode::InvalidArgument);
  EXPECT_FALSE(S->bitcode());
  EXPECT_EQ(S->instructionCount(), 0);
  EXPECT_EQ(S->printIR(), "");
  for (int64_t F : S->features())
    EXPECT_EQ(F, 0);
}

TEST(PhaseSession, SnapshotAndRestoreRoundTrip) {
  std::unique_ptr<Session> S = loaded();
  ASSERT_FALSE(S->apply(actionIndex("mem2reg")));
  ASSERT_FALSE(S->snapshot(3));
  std::string Saved = S->printIR();
  int64_t SavedCount = S->instructionCount();
  autophase::FeatureVector SavedFeatures = S->features();
  ASSERT_FALSE(S->apply(actionIndex("inline")));
  ASSERT_FALSE(S->apply(actionIndex("instcombine")));
  ASSERT_FALSE(S->apply(actionIndex("simplifycfg")));
  EXPECT_NE(S->printIR(), Saved);
  EXPECT_EQ(S->steps(), 4);

  ASSERT_FALSE(S->restore(3));
  EXPECT_EQ(S->printIR(), Saved);
  EXPECT_EQ(S->instructionCount(), SavedCount);
  EXPECT_EQ(S->steps(), 1);
  // The slot keeps its copy: restoring twice gives the same state.
  ASSERT_FALSE(S->apply(actionIndex("sroa")));
  ASSERT_FALSE(S->restore(3));
  EXPECT_EQ(S->printIR(), Saved);
  EXPECT_EQ(S->features(), SavedFeatures);
}

TEST(PhaseSession, ResetGoesBackToTheModuleAsLoaded) {
  std::unique_ptr<Session> S = loaded();
  std::string Pristine = S->printIR();
  autophase::FeatureVector Features = S->features();
  ASSERT_FALSE(S->snapshot(0));
  ASSERT_FALSE(S->apply(actionIndex("sroa")));
  ASSERT_FALSE(S->apply(actionIndex("gvn")));
  ASSERT_FALSE(S->reset());
  EXPECT_EQ(S->printIR(), Pristine);
  EXPECT_EQ(S->features(), Features);
  EXPECT_EQ(S->steps(), 0);
  EXPECT_FALSE(S->restore(0)); // snapshots survive a reset
}

TEST(PhaseSession, FilesBadOrTooLargeAreErrorsNamingThem) {
  phase_test::TempDir Dir;
  std::unique_ptr<Session> S = loaded();
  std::string Before = S->printIR();

  std::string Corrupt = Dir.write("corrupt.bc", std::string("BC\xC0\xDE", 4) +
                                                    std::string(64, '\x7f'));
  Error E = S->loadFile(Corrupt);
  ASSERT_TRUE(E);
  EXPECT_NE(E.message().find(Corrupt), std::string::npos) << E.message();
  EXPECT_NE(E.message().find("not valid LLVM bitcode or IR"), std::string::npos)
      << E.message();

  std::string Missing = Dir.path("missing.bc");
  E = S->loadFile(Missing);
  EXPECT_EQ(E.code(), ErrorCode::IO);
  EXPECT_NE(E.message().find(Missing), std::string::npos) << E.message();

  E = S->loadFile(Dir.path(""));
  EXPECT_EQ(E.code(), ErrorCode::IO) << E.toString(); // a directory

  std::string Invalid = Dir.write("invalid.ll", "define i32 @f() {\n"
                                                "  ret i64 0\n}\n");
  E = S->loadFile(Invalid);
  ASSERT_TRUE(E);
  EXPECT_NE(E.message().find(Invalid), std::string::npos) << E.message();

  // A failed load keeps the module loaded before.
  EXPECT_EQ(S->moduleName(), "loop.bc");
  EXPECT_EQ(S->printIR(), Before);

  SessionOptions Small;
  Small.MaxInputBytes = 64;
  std::unique_ptr<Session> Capped = newSession(Small);
  std::string Big =
      Dir.write("big.bc", phase_test::toBitcode(phase_test::LoopModule));
  E = Capped->loadFile(Big);
  EXPECT_EQ(E.code(), ErrorCode::TooLarge);
  EXPECT_NE(E.message().find(Big), std::string::npos) << E.message();
  EXPECT_FALSE(Capped->hasModule());
}

TEST(PhaseSession, WritesBitcodeThatLoadsBack) {
  phase_test::TempDir Dir;
  std::unique_ptr<Session> S = loaded();
  ASSERT_FALSE(S->apply(actionIndex("sroa")));
  std::string Out = Dir.path("out.bc");
  Error E = S->writeBitcode(Out);
  ASSERT_FALSE(E) << E.toString();
  std::unique_ptr<Session> Again = newSession();
  E = Again->loadFile(Out);
  ASSERT_FALSE(E) << E.toString();
  EXPECT_EQ(Again->instructionCount(), S->instructionCount());
  EXPECT_EQ(Again->features(), S->features());
  Expected<std::string> Bytes = S->bitcode();
  ASSERT_TRUE(Bytes);
  EXPECT_EQ(Bytes->substr(0, 4), std::string("BC\xC0\xDE", 4));
  EXPECT_EQ(S->writeBitcode(Dir.path("no/such/dir.bc")).code(), ErrorCode::IO);
}

TEST(PhaseSession, AdoptsAModuleAndReleasesItWithItsContext) {
  auto Context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> M =
      phase_test::parse(*Context, phase_test::LoopModule);
  ASSERT_TRUE(M);
  const llvm::Module *Given = M.get();
  std::unique_ptr<Session> S = newSession();
  Error E = S->adopt(std::move(Context), std::move(M), "loop");
  ASSERT_FALSE(E) << E.toString();
  // the module itself, not a copy; the same observation as loaded bytes
  EXPECT_EQ(S->module(), Given);
  EXPECT_EQ(S->moduleName(), "loop");
  EXPECT_EQ(S->features(), loaded()->features());
  EXPECT_EQ(S->baselineInstructionCount(),
            loaded()->baselineInstructionCount());
  ASSERT_FALSE(S->apply(static_cast<int64_t>(defaultOzAction())));
  int64_t Optimised = S->instructionCount();
  auto [Back, Out] = S->release();
  ASSERT_TRUE(Back && Out);
  EXPECT_EQ(Out.get(), Given);
  EXPECT_EQ(&Out->getContext(), Back.get());
  EXPECT_EQ(autophase::instructionCount(*Out), Optimised);
  EXPECT_FALSE(S->hasModule());
  EXPECT_EQ(S->instructionCount(), 0);
  auto [NoContext, NoModule] = S->release();
  EXPECT_FALSE(NoContext || NoModule);
  // a module of another context is refused, and nothing changes
  llvm::LLVMContext Other;
  EXPECT_EQ(S->adopt(std::make_unique<llvm::LLVMContext>(),
                     phase_test::parse(Other, phase_test::LoopModule), "x")
                .code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(S->adopt(nullptr, nullptr, "x").code(), ErrorCode::InvalidArgument);
  EXPECT_FALSE(S->hasModule());
}

TEST(PhaseSession, TextualIRLoadsToo) {
  phase_test::TempDir Dir;
  std::unique_ptr<Session> S = newSession();
  Error E = S->loadFile(Dir.write("loop.ll", phase_test::LoopModule));
  ASSERT_FALSE(E) << E.toString();
  EXPECT_EQ(S->instructionCount(), loaded()->instructionCount());
}

TEST(PhaseSession, EveryActionRunsWithoutBreakingTheModule) {
  for (Rollback R : {Rollback::Previous, Rollback::Pristine}) {
    SessionOptions O;
    O.OnFailure = R;
    std::unique_ptr<Session> S = loaded(O);
    for (size_t I = 0; I < actions().size(); ++I) {
      ASSERT_FALSE(S->reset());
      Error E = S->apply(static_cast<int64_t>(I));
      EXPECT_FALSE(E) << actions()[I].Name << ": " << E.toString();
      ASSERT_NE(S->module(), nullptr);
      EXPECT_FALSE(llvm::verifyModule(*S->module(), &llvm::errs()))
          << actions()[I].Name;
      EXPECT_EQ(S->steps(), 1);
    }
  }
}

TEST(PhaseSession, ActionsChainOnTheSameModule) {
  // A whole episode: every action once, in table order, on one module.
  std::unique_ptr<Session> S = loaded();
  for (size_t I = 0; I < actions().size(); ++I) {
    Error E = S->apply(static_cast<int64_t>(I));
    EXPECT_FALSE(E) << actions()[I].Name << ": " << E.toString();
  }
  EXPECT_EQ(S->steps(), static_cast<int64_t>(actions().size()));
  EXPECT_LT(S->instructionCount(), S->initialInstructionCount());
}

TEST(PhaseSession, AFailingStepIsUndoneAndTheSessionGoesOn) {
  // pgo-instr-use without a profile file reports an error diagnostic: the
  // step fails, and LLVM neither prints it nor exits (its default handler
  // would).
  for (Rollback R : {Rollback::Previous, Rollback::Pristine}) {
    SessionOptions O;
    O.OnFailure = R;
    std::unique_ptr<Session> S = loaded(O);
    std::string Pristine = S->printIR();
    ASSERT_FALSE(S->apply(actionIndex("sroa")));
    std::string Before = S->printIR();
    Error E = S->applyPipeline("pgo-instr-use");
    EXPECT_EQ(E.code(), ErrorCode::Broken) << E.toString();
    EXPECT_NE(E.message().find("pipeline 'pgo-instr-use' broke module "
                               "'loop.bc'"),
              std::string::npos)
        << E.message();
    if (R == Rollback::Previous) {
      EXPECT_EQ(S->printIR(), Before);
      EXPECT_EQ(S->steps(), 1);
    } else {
      EXPECT_EQ(S->printIR(), Pristine);
      EXPECT_EQ(S->steps(), 0);
    }
    EXPECT_EQ(S->instructionCount(),
              S->features()[autophase::index(autophase::Feature::TotalInsts)]);
    Error Next = S->apply(actionIndex("instcombine"));
    EXPECT_FALSE(Next) << Next.toString();
  }
}

TEST(PhaseSession, ARollbackReplaysEveryStepSinceTheLastCopy) {
  // The state before a failed step is rebuilt from the newest copy the
  // session holds (as loaded, a snapshot, a restored slot or a checkpoint)
  // and the steps since: whether it checkpoints after every step (0 ms) or
  // never, the module comes back as it was (up to the numbering of local
  // names, as after a restore), however it got there.
  for (unsigned Budget : {0u, 1000000u}) {
    SessionOptions O;
    O.MaxReplayMillis = Budget;
    std::unique_ptr<Session> S = loaded(O);
    for (const char *Name : {"sroa", "instcombine", "simplifycfg"})
      ASSERT_FALSE(S->apply(actionIndex(Name))) << Name;
    std::string Before = anonymousIR(*S);
    EXPECT_EQ(S->applyPipeline("pgo-instr-use").code(), ErrorCode::Broken);
    EXPECT_EQ(anonymousIR(*S), Before) << "budget " << Budget;
    EXPECT_EQ(S->steps(), 3);

    // From a snapshot, then from that snapshot restored: the steps taken
    // after it are replayed, not those before.
    ASSERT_FALSE(S->snapshot(2));
    ASSERT_FALSE(S->apply(actionIndex("licm")));
    ASSERT_FALSE(S->apply(actionIndex("loop-rotate")));
    Before = anonymousIR(*S);
    EXPECT_EQ(S->applyPipeline("pgo-instr-use").code(), ErrorCode::Broken);
    EXPECT_EQ(anonymousIR(*S), Before);
    EXPECT_EQ(S->steps(), 5);
    ASSERT_FALSE(S->apply(actionIndex("default<Oz>")));
    ASSERT_FALSE(S->restore(2));
    ASSERT_FALSE(S->snapshot(2)); // the slot replaced by its own copy
    ASSERT_FALSE(S->apply(actionIndex("gvn")));
    Before = anonymousIR(*S);
    EXPECT_EQ(S->applyPipeline("pgo-instr-use").code(), ErrorCode::Broken);
    EXPECT_EQ(anonymousIR(*S), Before);
    EXPECT_EQ(S->steps(), 4);

    // After a reset, from the module as loaded again.
    ASSERT_FALSE(S->reset());
    ASSERT_FALSE(S->apply(actionIndex("mem2reg")));
    Before = anonymousIR(*S);
    EXPECT_EQ(S->applyPipeline("pgo-instr-use").code(), ErrorCode::Broken);
    EXPECT_EQ(anonymousIR(*S), Before);
    EXPECT_EQ(S->steps(), 1);
    EXPECT_EQ(S->instructionCount(),
              S->features()[autophase::index(autophase::Feature::TotalInsts)]);
  }
}

TEST(PhaseSession, PipelinesOutsideTheTable) {
  std::unique_ptr<Session> S = loaded();
  int64_t Initial = S->instructionCount();
  Error E = S->applyPipeline("function(sroa," MLBRIDGE_PASS_INSTCOMBINE ")");
  ASSERT_FALSE(E) << E.toString();
  EXPECT_LT(S->instructionCount(), Initial);
  EXPECT_EQ(S->steps(), 1);
  std::string Before = S->printIR();
  E = S->applyPipeline("no-such-pass");
  EXPECT_EQ(E.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(E.message().find("does not parse"), std::string::npos);
  EXPECT_EQ(S->printIR(), Before);
  EXPECT_EQ(S->steps(), 1);
}

TEST(PhasePipelines, DefaultElementsTakeAnInlineThresholdForTheirBuildOnly) {
  auto &Registered = llvm::cl::getRegisteredOptions();
  auto *Threshold =
      dynamic_cast<llvm::cl::opt<int> *>(Registered.lookup("inline-threshold"));
  ASSERT_NE(Threshold, nullptr);
  int Default = Threshold->getValue();
  llvm::ModulePassManager MPM;
  Error E = buildPipeline("default<Oz;inline-threshold=-7>,function(sroa),"
                          "default<Os>",
                          nullptr, nullptr, MPM);
  ASSERT_FALSE(E) << E.toString();
  EXPECT_FALSE(MPM.isEmpty());
  // set while its element was built, then as before
  EXPECT_EQ(Threshold->getNumOccurrences(), 0u);
  EXPECT_EQ(Threshold->getValue(), Default);
  for (const char *Bad :
       {"default<Oz;inline-threshold=10001>", "default<Oz;inline-threshold=x>",
        "default<Oz;inline-threshold=1;inline-threshold=2>", "default<Og>",
        "default<Oz;unroll>", "sroa,default<Oz;inline-threshold=>"}) {
    llvm::ModulePassManager Unused;
    Error Refused = buildPipeline(Bad, nullptr, nullptr, Unused);
    EXPECT_EQ(Refused.code(), ErrorCode::InvalidArgument) << Bad;
    EXPECT_NE(Refused.message().find("does not parse"), std::string::npos);
  }
  // and through a session: the step runs, with the same threshold afterwards
  std::unique_ptr<Session> S = loaded();
  ASSERT_FALSE(S->applyPipeline("default<Oz;inline-threshold=50>"));
  EXPECT_EQ(Threshold->getNumOccurrences(), 0u);
  EXPECT_EQ(Threshold->getValue(), Default);
}

TEST(PhasePipelines, OptSizeTakesMinSizeOffEveryFunction) {
  // what clang -Oz's front end gives: minsize and optsize on every function
  const char *IR = R"IR(
declare i32 @ext(i32) #0

define i32 @f(i32 %x) #0 {
  %y = call i32 @ext(i32 %x)
  ret i32 %y
}

define i32 @g(i32 %x) #1 {
  ret i32 %x
}

attributes #0 = { minsize nounwind optsize }
attributes #1 = { minsize nounwind }
)IR";
  std::unique_ptr<Session> S = newSession({});
  ASSERT_FALSE(S->loadBytes(phase_test::toBitcode(IR), "front-end.bc"));
  ASSERT_FALSE(S->applyPipeline("optsize"));
  std::string After = S->printIR();
  EXPECT_EQ(After.find("minsize"), std::string::npos) << After;
  // every function keeps or gets optsize: -Os's front end
  EXPECT_NE(After.find("attributes #0 = { nounwind optsize }"),
            std::string::npos)
      << After;
  EXPECT_EQ(After.find("attributes #1"), std::string::npos) << After;
  // and the table's -Os pipelines parse
  for (const char *Name : {"pipeline-optsize", "pipeline-optsize-mergefunc"})
    EXPECT_TRUE(findAction(Name)) << Name;
}

TEST(PhaseSession, LoadingAgainStartsOver) {
  std::unique_ptr<Session> S = loaded();
  ASSERT_FALSE(S->apply(actionIndex("sroa")));
  ASSERT_FALSE(S->snapshot(1));
  std::string Bytes = phase_test::toBitcode(phase_test::LoopModule);
  ASSERT_FALSE(S->loadBytes(Bytes, "again.bc"));
  EXPECT_EQ(S->moduleName(), "again.bc");
  EXPECT_EQ(S->steps(), 0);
  EXPECT_EQ(S->instructionCount(), S->initialInstructionCount());
  EXPECT_EQ(S->restore(1).code(), ErrorCode::InvalidArgument); // dropped
}

} // namespace

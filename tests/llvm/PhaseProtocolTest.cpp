//===- PhaseProtocolTest.cpp - The phase-ordering service protocol --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The service protocol in process, with a scripted runner standing for the
// model: the first observation before any module, every command and its
// status, the context (module path or error text), a runner error ending
// the service; deployment choosing actions, stopping, and falling back to
// default<Oz>; the JSON description.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/PhaseProtocol.h"

#include "PhaseTestSupport.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlbridge;
using namespace mlbridge::phase;

namespace {

/// What the scripted runner saw at one turn.
struct Turn {
  std::vector<int64_t> Autophase;
  int64_t Count, Initial, Baseline, Status, Module, Steps;
  std::string Context;
};

/// A model that answers from a script (one row of outputs per turn) and
/// records every observation; fails with PeerClosed when the script ends.
class ScriptedRunner final : public ModelRunner {
public:
  static std::unique_ptr<ScriptedRunner>
  create(std::vector<TensorSpec> Outputs,
         std::vector<std::vector<int64_t>> Script) {
    std::unique_ptr<ScriptedRunner> R(new ScriptedRunner());
    Error E = R->initBuffers(observationSpecs(), std::move(Outputs));
    EXPECT_FALSE(E) << E.toString();
    R->Script = std::move(Script);
    return R;
  }
  Error switchContext(std::string_view Name) override {
    Context = Name;
    ++Switches;
    return Error::success();
  }
  std::vector<Turn> Turns;
  int Switches = 0;

private:
  ScriptedRunner() = default;
  Error evaluateImpl() override {
    auto In = [&](const char *Name) { return **input<int64_t>(Name); };
    const int64_t *F = *input<int64_t>(AutophaseInput);
    Turns.push_back({std::vector<int64_t>(F, F + autophase::NumFeatures),
                     In(InstCountInput), In(InitialInstCountInput),
                     In(BaselineInstCountInput), In(StatusInput),
                     In(ModuleInput), In(StepsInput), Context});
    if (Next >= Script.size())
      return makeError(ErrorCode::PeerClosed, "the script ended");
    const std::vector<int64_t> &Row = Script[Next++];
    for (size_t I = 0; I < Row.size() && I < Outputs.size(); ++I)
      *static_cast<int64_t *>(Outputs.data(I)) = Row[I];
    return Error::success();
  }
  std::vector<std::vector<int64_t>> Script;
  size_t Next = 0;
  std::string Context;
};

int64_t actionIndex(const char *Name) {
  Expected<size_t> I = findAction(Name);
  EXPECT_TRUE(I) << I.error().toString();
  return I ? static_cast<int64_t>(*I) : -1;
}

std::unique_ptr<Session> newSession() {
  Expected<std::unique_ptr<Session>> S = Session::create();
  EXPECT_TRUE(S) << S.error().toString();
  return S ? std::move(*S) : nullptr;
}

constexpr int64_t Apply = 0, Load = 1, Reset = 2, Snapshot = 3, Restore = 4,
                  End = 5, Write = 6;
constexpr int64_t Ok = 0, Invalid = 1, LoadFailed = 3, NoModule = 4,
                  WriteFailed = 5;

TEST(PhaseProtocol, SpecsMatchTheDocumentation) {
  std::vector<TensorSpec> In = observationSpecs();
  ASSERT_EQ(In.size(), 7u);
  EXPECT_EQ(In[0].toJSON(),
            R"({"name":"autophase","type":"int64_t","port":0,"shape":[56]})");
  const char *Names[] = {"autophase",
                         "instcount",
                         "initial_instcount",
                         "baseline_instcount",
                         "status",
                         "module",
                         "steps"};
  for (size_t I = 0; I < In.size(); ++I) {
    EXPECT_EQ(In[I].name(), Names[I]);
    EXPECT_TRUE(In[I].isElementType<int64_t>());
  }
  EXPECT_EQ(commandSpecs()[0].name(), "command");
  EXPECT_EQ(commandSpecs()[1].name(), "argument");
  EXPECT_EQ(actionSpecs()[0].name(), "action");
}

TEST(PhaseProtocol, TrainingServesEveryCommand) {
  phase_test::TempDir Dir;
  std::string Good =
      Dir.write("loop.bc", phase_test::toBitcode(phase_test::LoopModule));
  std::string Out = Dir.path("out.bc");
  TrainingOptions O{{Good, Dir.path("missing.bc")}, ""};
  std::unique_ptr<ScriptedRunner> R = ScriptedRunner::create(
      commandSpecs(), {{Apply, 0},                          // 1: no module yet
                       {Load, 0},                           // 2
                       {Apply, actionIndex("sroa")},        // 3
                       {Apply, 999},                        // 4: no such action
                       {Snapshot, 2},                       // 5
                       {Apply, actionIndex("instcombine")}, // 6
                       {Restore, 2},                        // 7
                       {Restore, 5},                        // 8: empty slot
                       {Load, 1},                           // 9: missing file
                       {Load, 7},  // 10: no such module
                       {Write, 0}, // 11: no --output
                       {42, 0},    // 12: no such command
                       {Reset, 0}, // 13
                       {End, 0}});
  std::unique_ptr<Session> S = newSession();
  Error E = serveTraining(*R, *S, O);
  ASSERT_FALSE(E) << E.toString();
  const std::vector<Turn> &T = R->Turns;
  ASSERT_EQ(T.size(), 14u);

  // The first observation: nothing loaded.
  EXPECT_EQ(T[0].Module, -1);
  EXPECT_EQ(T[0].Status, Ok);
  EXPECT_EQ(T[0].Count, 0);
  EXPECT_EQ(T[0].Context, "");
  EXPECT_EQ(T[0].Autophase, std::vector<int64_t>(56, 0));
  EXPECT_EQ(T[1].Status, NoModule);
  EXPECT_NE(T[1].Context.find("LOAD"), std::string::npos) << T[1].Context;

  // LOAD 0.
  EXPECT_EQ(T[2].Status, Ok);
  EXPECT_EQ(T[2].Module, 0);
  EXPECT_EQ(T[2].Context, Good);
  EXPECT_GT(T[2].Count, 0);
  EXPECT_EQ(T[2].Initial, T[2].Count);
  EXPECT_LT(T[2].Baseline, T[2].Initial);
  EXPECT_EQ(T[2].Autophase[autophase::index(autophase::Feature::TotalInsts)],
            T[2].Count);
  EXPECT_EQ(T[2].Steps, 0);

  // APPLY sroa, then an invalid action (nothing changes).
  EXPECT_EQ(T[3].Status, Ok);
  EXPECT_LT(T[3].Count, T[2].Count);
  EXPECT_EQ(T[3].Steps, 1);
  EXPECT_EQ(T[4].Status, Invalid);
  EXPECT_NE(T[4].Context.find("no action #999"), std::string::npos);
  EXPECT_EQ(T[4].Count, T[3].Count);
  EXPECT_EQ(T[4].Steps, 1);

  // SNAPSHOT, APPLY, RESTORE: back to the snapshot's count and steps.
  EXPECT_EQ(T[5].Status, Ok);
  EXPECT_EQ(T[5].Context, Good);
  EXPECT_EQ(T[6].Steps, 2);
  EXPECT_EQ(T[7].Status, Ok);
  EXPECT_EQ(T[7].Count, T[3].Count);
  EXPECT_EQ(T[7].Autophase, T[3].Autophase);
  EXPECT_EQ(T[7].Steps, 1);
  EXPECT_EQ(T[8].Status, Invalid);

  // A failed load keeps the module; a bad index or command changes nothing.
  EXPECT_EQ(T[9].Status, LoadFailed);
  EXPECT_NE(T[9].Context.find("missing.bc"), std::string::npos);
  EXPECT_EQ(T[9].Module, 0);
  EXPECT_EQ(T[9].Count, T[7].Count);
  EXPECT_EQ(T[10].Status, Invalid);
  EXPECT_EQ(T[11].Status, WriteFailed);
  EXPECT_EQ(T[12].Status, Invalid);
  EXPECT_NE(T[12].Context.find("unknown command 42"), std::string::npos);

  // RESET.
  EXPECT_EQ(T[13].Status, Ok);
  EXPECT_EQ(T[13].Count, T[2].Count);
  EXPECT_EQ(T[13].Steps, 0);
  EXPECT_EQ(T[13].Context, Good);
  // The context is switched only when it changes.
  EXPECT_LT(R->Switches, 14);
}

TEST(PhaseProtocol, WriteWritesTheCurrentModule) {
  phase_test::TempDir Dir;
  std::string Good =
      Dir.write("loop.bc", phase_test::toBitcode(phase_test::LoopModule));
  TrainingOptions O{{Good}, Dir.path("out.bc")};
  std::unique_ptr<ScriptedRunner> R = ScriptedRunner::create(
      commandSpecs(),
      {{Load, 0}, {Apply, actionIndex("sroa")}, {Write, 0}, {End, 0}});
  std::unique_ptr<Session> S = newSession();
  ASSERT_FALSE(serveTraining(*R, *S, O));
  EXPECT_EQ(R->Turns.back().Status, Ok);
  std::unique_ptr<Session> Check = newSession();
  ASSERT_FALSE(Check->loadFile(O.Output));
  EXPECT_EQ(Check->instructionCount(), R->Turns.back().Count);
}

TEST(PhaseProtocol, ARunnerErrorEndsTraining) {
  std::unique_ptr<ScriptedRunner> R =
      ScriptedRunner::create(commandSpecs(), {{Reset, 0}});
  std::unique_ptr<Session> S = newSession();
  Error E = serveTraining(*R, *S, TrainingOptions{});
  EXPECT_EQ(E.code(), ErrorCode::PeerClosed);
  EXPECT_EQ(R->Turns.size(), 2u);
}

TEST(PhaseProtocol, TrainingNeedsTheCommandOutputs) {
  std::unique_ptr<ScriptedRunner> R =
      ScriptedRunner::create(actionSpecs(), {{End}});
  std::unique_ptr<Session> S = newSession();
  EXPECT_TRUE(serveTraining(*R, *S, TrainingOptions{}));
  EXPECT_TRUE(R->Turns.empty());
}

TEST(PhaseProtocol, DeploymentAppliesTheChosenActionsUntilStop) {
  std::unique_ptr<Session> S = newSession();
  ASSERT_FALSE(
      S->loadBytes(phase_test::toBitcode(phase_test::LoopModule), "loop.bc"));
  const auto Stop = static_cast<int64_t>(actions().size());
  std::unique_ptr<ScriptedRunner> R = ScriptedRunner::create(
      actionSpecs(),
      {{actionIndex("sroa")}, {actionIndex("instcombine")}, {Stop}});
  DeploymentResult D = chooseSequence(R.get(), *S, 10);
  EXPECT_FALSE(D.RunnerError) << D.RunnerError.toString();
  EXPECT_EQ(D.Steps, 2);
  EXPECT_EQ(D.FailedSteps, 0);
  EXPECT_EQ(S->steps(), 2);
  ASSERT_EQ(R->Turns.size(), 3u);
  EXPECT_EQ(R->Turns[0].Module, 0);
  EXPECT_EQ(R->Turns[0].Context, "loop.bc");
  EXPECT_EQ(R->Turns[2].Steps, 2);
  EXPECT_LT(R->Turns[2].Count, R->Turns[0].Count);
}

TEST(PhaseProtocol, DeploymentStopsAtMaxStepsOrANegativeAction) {
  std::string Bytes = phase_test::toBitcode(phase_test::LoopModule);
  std::unique_ptr<Session> S = newSession();
  ASSERT_FALSE(S->loadBytes(Bytes, "loop.bc"));
  std::vector<std::vector<int64_t>> Forever(20, {actionIndex("dce")});
  std::unique_ptr<ScriptedRunner> R =
      ScriptedRunner::create(actionSpecs(), Forever);
  DeploymentResult D = chooseSequence(R.get(), *S, 3);
  EXPECT_EQ(D.Steps, 3);
  EXPECT_EQ(R->Turns.size(), 3u);

  ASSERT_FALSE(S->loadBytes(Bytes, "loop.bc"));
  R = ScriptedRunner::create(actionSpecs(), {{-1}});
  D = chooseSequence(R.get(), *S, 3);
  EXPECT_EQ(D.Steps, 0);
  EXPECT_EQ(S->instructionCount(), S->initialInstructionCount());
}

TEST(PhaseProtocol, DeploymentFallsBackToOzOnARunnerError) {
  std::unique_ptr<Session> S = newSession();
  ASSERT_FALSE(
      S->loadBytes(phase_test::toBitcode(phase_test::LoopModule), "loop.bc"));
  std::unique_ptr<ScriptedRunner> R =
      ScriptedRunner::create(actionSpecs(), {}); // fails at once
  DeploymentResult D = chooseSequence(R.get(), *S, 10);
  EXPECT_EQ(D.RunnerError.code(), ErrorCode::PeerClosed);
  EXPECT_EQ(S->instructionCount(), S->baselineInstructionCount());

  ASSERT_FALSE(S->reset());
  D = chooseSequence(nullptr, *S, 10);
  EXPECT_TRUE(D.RunnerError);
  EXPECT_EQ(S->instructionCount(), S->baselineInstructionCount());
}

TEST(PhaseProtocol, DescriptionListsActionsFeaturesAndCodes) {
  std::string J = describeService();
  for (const char *Key :
       {"\"actions\":", "\"features\":", "\"commands\":", "\"statuses\":",
        "\"inputs\":", "\"outputs\":", "\"deploy_outputs\":",
        "\"default_action\":",
        "{\"name\":\"licm\",\"pipeline\":\"function("
        "loop-mssa(licm))\"}",
        "\"apply\":0", "\"write\":6", "\"BBNumArgsHi\"", "\"testUnary\"",
        R"({"name":"argument","type":"int64_t","port":0,"shape":[1]})"})
    EXPECT_NE(J.find(Key), std::string::npos) << Key;
}

} // namespace

namespace {
/// Textual IR that overflows the stack of LLVM 19's parser: \p Depth
/// nested array types, or \p Depth nested constant expressions.
std::string nestedTypes(int Depth) {
  std::string Type = "i8";
  std::string Open, Close;
  for (int I = 0; I < Depth; ++I) {
    Open += "[1 x ";
    Close += "]";
  }
  return "%t = type " + Open + Type + Close + "\n@g = global ptr null\n";
}
std::string nestedConstants(int Depth) {
  std::string Open, Close;
  for (int I = 0; I < Depth; ++I) {
    Open += "getelementptr (i8, ptr ";
    Close += ", i64 1)";
  }
  return "@x = global i8 0\n@g = global ptr " + Open + "@x" + Close + "\n";
}
} // namespace

class PhaseCrash : public ::testing::TestWithParam<int> {};

TEST_P(PhaseCrash, AModuleThatCrashesLLVMsParserCostsItsLoadNotTheService) {
  phase_test::TempDir Dir;
  std::string Crasher =
      Dir.write("crash.ll", GetParam() == 0 ? nestedTypes(300000)
                                            : nestedConstants(300000));
  std::string Good =
      Dir.write("loop.bc", phase_test::toBitcode(phase_test::LoopModule));
  TrainingOptions O{{Crasher, Good}, ""};
  std::unique_ptr<ScriptedRunner> R = ScriptedRunner::create(
      commandSpecs(), {{Load, 1},
                       {Load, 0}, // crashes the worker holding module 1
                       {Apply, actionIndex("sroa")}, // a fresh worker
                       {Load, 1},
                       {Apply, actionIndex("sroa")},
                       {End, 0}});
  std::unique_ptr<Session> S = newSession();
  Error E = serveTraining(*R, *S, O);
  ASSERT_FALSE(E) << E.toString();
  const std::vector<Turn> &T = R->Turns;
  ASSERT_EQ(T.size(), 6u);
  EXPECT_EQ(T[1].Status, Ok);
  EXPECT_EQ(T[2].Status, LoadFailed);
  EXPECT_NE(T[2].Context.find("LLVM crashed"), std::string::npos)
      << T[2].Context;
  EXPECT_EQ(T[2].Module, -1);
  EXPECT_EQ(T[3].Status, NoModule);
  EXPECT_EQ(T[4].Status, Ok);
  EXPECT_EQ(T[4].Module, 1);
  EXPECT_EQ(T[5].Status, Ok);
  EXPECT_EQ(T[5].Steps, 1);
  EXPECT_FALSE(S->hasModule()); // the service's own session is untouched
}

INSTANTIATE_TEST_SUITE_P(Kinds, PhaseCrash, ::testing::Values(0, 1),
                         [](const auto &Info) {
                           return Info.param == 0
                                      ? std::string("NestedTypes")
                                      : std::string("NestedConstants");
                         });

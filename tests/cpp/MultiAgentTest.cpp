//===- MultiAgentTest.cpp - Multi-agent RL with ONNX policies -------------===//
//
// Two agents take turns in a toy environment: a recurrent one (its state
// output feeds its state input at the next step) and a feed-forward one;
// the episode must run to completion with the actions a reference
// computation predicts. Models: tools/make_onnx_test_models.py.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/MultiAgent.h"
#include "mlbridge/OnnxModelRunner.h"

#include "TestHelpers.h"

#include <cstdlib>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
std::string modelDir() {
  static const std::string Dir = [] {
    std::string D = ::testing::TempDir() + "/mlbridge-rl-models";
    std::string Cmd = testPython() + " " + MLBRIDGE_SOURCE_DIR +
                      "/tools/make_onnx_test_models.py " + D;
    return havePython() && std::system(Cmd.c_str()) == 0 ? D : std::string();
  }();
  return Dir;
}

std::unique_ptr<ModelRunner> load(const std::string &File,
                                  std::vector<std::string> In,
                                  std::vector<std::string> Out) {
  std::vector<TensorSpec> I, O;
  for (const std::string &N : In)
    I.push_back(TensorSpec::of<float>(N, {1, 2}));
  for (const std::string &N : Out)
    O.push_back(TensorSpec::of<float>(N, {1, 2}));
  auto R = OnnxModelRunner::createFromFile(modelDir() + "/" + File, I, O);
  EXPECT_TRUE(bool(R)) << R.error().toString();
  return R ? std::unique_ptr<ModelRunner>(std::move(*R)) : nullptr;
}

/// Agents alternate for Steps steps; agent 0 sees [t%3, 1], agent 1 sees
/// [1, t%2]; reward 1 when the action equals t%2.
class TurnGame final : public Environment {
public:
  explicit TurnGame(size_t Steps) : Steps(Steps) {}
  Error reset() override {
    T = 0;
    Actions.clear();
    return Error::success();
  }
  bool done() const override { return T >= Steps; }
  size_t nextAgent() const override { return T % 2; }
  Error observe(size_t Agent, ModelRunner &R) override {
    auto Obs = R.input<float>("obs");
    if (!Obs)
      return Obs.takeError();
    (*Obs)[0] = Agent == 0 ? float(T % 3) : 1.0f;
    (*Obs)[1] = Agent == 0 ? 1.0f : float(T % 2);
    return Error::success();
  }
  Expected<double> step(size_t, const Action &A) override {
    Actions.push_back(A.Index);
    double Reward = A.Index == int64_t(T % 2) ? 1.0 : 0.0;
    ++T;
    return Reward;
  }
  size_t Steps, T = 0;
  std::vector<int64_t> Actions;
};
} // namespace

TEST(MultiAgent, TwoAgentsWithRecurrentStateRunToCompletion) {
  if (modelDir().empty())
    GTEST_SKIP() << "could not build the models (needs Python onnx)";
  ASSERT_EXPECTED(Recurrent,
                  Agent::create("accumulator",
                                load("accumulator.onnx", {"obs", "h_in"},
                                     {"logits", "h_out"}),
                                "logits", ActionKind::Discrete,
                                {{"h_in", "h_out"}}));
  ASSERT_EXPECTED(
      Mirror, Agent::create("mirror", load("mirror.onnx", {"obs"}, {"logits"}),
                            "logits", ActionKind::Discrete));
  TurnGame Game(20);
  Driver D(Game, {Recurrent->get(), Mirror->get()});
  for (int Episode = 0; Episode < 2; ++Episode) { // state resets per episode
    auto Stats = D.runEpisode(1000);
    ASSERT_TRUE(bool(Stats)) << Stats.error().toString();
    EXPECT_EQ(Stats->Steps, 20u);
    EXPECT_TRUE(Game.done());
    // Reference: agent 0 accumulates its observations; argmax of the sum
    // (first index on ties). Agent 1 picks argmin of its observation.
    float H0 = 0, H1 = 0;
    double Reward0 = 0, Reward1 = 0;
    for (size_t T = 0; T < 20; ++T) {
      int64_t Expected;
      if (T % 2 == 0) {
        H0 += float(T % 3), H1 += 1.0f;
        Expected = H1 > H0 ? 1 : 0;
        Reward0 += Expected == int64_t(T % 2);
      } else {
        Expected = 1.0f > float(T % 2) ? 1 : 0; // argmax(-obs)
        Reward1 += Expected == int64_t(T % 2);
      }
      EXPECT_EQ(Game.Actions[T], Expected) << "step " << T;
    }
    EXPECT_EQ(Stats->Rewards[0], Reward0);
    EXPECT_EQ(Stats->Rewards[1], Reward1);
    // The carried state is the running sum, never a dummy.
    const float *H = (*Recurrent)->runner().input<float>(1);
    EXPECT_EQ(H[0], H0);
    EXPECT_EQ(H[1], H1);
  }
}

TEST(MultiAgent, ContinuousActionsAreTheOutputValues) {
  if (modelDir().empty())
    GTEST_SKIP() << "could not build the models (needs Python onnx)";
  ASSERT_EXPECTED(A,
                  Agent::create("halve", load("halve.onnx", {"obs"}, {"act"}),
                                "act", ActionKind::Continuous));
  float *Obs = (*A)->runner().input<float>(0);
  Obs[0] = 3.0f, Obs[1] = -1.0f;
  auto Act = (*A)->act();
  ASSERT_TRUE(bool(Act)) << Act.error().toString();
  ASSERT_EQ(Act->Values.Size, 2u);
  EXPECT_EQ(Act->Values[0], 1.5f);
  EXPECT_EQ(Act->Values[1], -0.5f);
}

TEST(MultiAgent, BadAgentDeclarationsAreErrors) {
  if (modelDir().empty())
    GTEST_SKIP() << "could not build the models (needs Python onnx)";
  auto NoOutput = Agent::create("a", load("mirror.onnx", {"obs"}, {"logits"}),
                                "action", ActionKind::Discrete);
  ASSERT_FALSE(bool(NoOutput));
  EXPECT_NE(NoOutput.error().message().find("no output 'action'"),
            std::string::npos);
  auto NoState =
      Agent::create("b", load("mirror.onnx", {"obs"}, {"logits"}), "logits",
                    ActionKind::Discrete, {{"h_in", "logits"}});
  ASSERT_FALSE(bool(NoState));
  EXPECT_NE(NoState.error().message().find("h_in"), std::string::npos);
}

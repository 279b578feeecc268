//===- multi_agent.cpp - Two agents schedule a function's loops -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// include/mlbridge/MultiAgent.h in a compiler pass: two agents take turns on
// every loop of a function. The unroll agent (recurrent: its state carries
// what it has seen of the function so far) says whether to unroll the loop
// by two; the vectorize agent, seeing the unroll agent's answer, whether to
// vectorize it. A cost model rewards the cycles saved and charges the code
// each transformation adds. Each agent's model is any runner configuration
// (mlbridge/RunnerConfig.h): an ONNX file in-process, an AOT module, or a
// pipe to a Python policy while it is trained.
//
//   mlbridge-example-multi-agent UNROLL_RUNNER VECTORIZE_RUNNER [LOOPS]
//
// e.g. onnx:accumulator.onnx onnx:mirror.onnx (the models of
// tools/make_onnx_test_models.py: every tensor float [1,2]; the unroll
// model maps (obs, h_in) to (logits, h_out), the vectorize model obs to
// logits). LOOPS (default 12) loops of a made-up function are scheduled in
// two episodes; a failing agent ends the episode, and the pass would then
// leave the loops to the compiler's own heuristics.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/MultiAgent.h"
#include "mlbridge/RunnerConfig.h"

#ifdef MLBRIDGE_EXAMPLE_HAVE_ONNX
#include "mlbridge/OnnxModelRunner.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mlbridge;

namespace {

/// One loop of the function: what the agents see of it.
struct Loop {
  int64_t TripCount;
  int64_t BodyInstructions;
};

/// The function's loops, scheduled loop by loop: the unroll agent (0), then
/// the vectorize agent (1) on the same loop.
class LoopSchedule final : public Environment {
public:
  explicit LoopSchedule(std::vector<Loop> Loops) : Loops(std::move(Loops)) {}

  Error reset() override {
    Step = 0;
    Unrolled.assign(Loops.size(), false);
    Vectorized.assign(Loops.size(), false);
    return Error::success();
  }
  bool done() const override { return Step >= 2 * Loops.size(); }
  size_t nextAgent() const override { return Step % 2; }

  Error observe(size_t AgentIndex, ModelRunner &Runner) override {
    auto Obs = Runner.input<float>("obs");
    if (!Obs)
      return Obs.takeError();
    const Loop &L = Loops[Step / 2];
    if (AgentIndex == 0) {
      (*Obs)[0] = float(L.TripCount) / 64.0f;
      (*Obs)[1] = float(L.BodyInstructions) / 16.0f;
    } else {
      (*Obs)[0] = L.TripCount % 4 == 0 ? 1.0f : 0.0f;
      (*Obs)[1] = Unrolled[Step / 2] ? 1.0f : 0.0f;
    }
    return Error::success();
  }

  Expected<double> step(size_t AgentIndex, const Action &A) override {
    size_t Index = Step / 2;
    const Loop &L = Loops[Index];
    bool Apply = A.Index == 1;
    double Reward = 0;
    if (AgentIndex == 0) {
      Unrolled[Index] = Apply;
      // Half the loop-control overhead saved, the body emitted twice.
      if (Apply)
        Reward = 0.5 * double(L.TripCount) - double(L.BodyInstructions);
    } else {
      // Four lanes when the trip count allows it, else a scalar epilogue.
      Vectorized[Index] = Apply;
      if (Apply)
        Reward = L.TripCount % 4 == 0
                     ? 0.75 * double(L.TripCount * L.BodyInstructions) / 4
                     : -double(L.BodyInstructions);
    }
    ++Step;
    return Reward;
  }

  const std::vector<Loop> &loops() const { return Loops; }
  bool unrolled(size_t I) const { return Unrolled[I]; }
  bool vectorized(size_t I) const { return Vectorized[I]; }

private:
  std::vector<Loop> Loops;
  size_t Step = 0;
  std::vector<bool> Unrolled, Vectorized;
};

std::vector<TensorSpec> floats(std::vector<std::string> Names) {
  std::vector<TensorSpec> Specs;
  for (const std::string &N : Names)
    Specs.push_back(TensorSpec::of<float>(N, {1, 2}));
  return Specs;
}

Expected<std::unique_ptr<Agent>> makeAgent(const std::string &Name,
                                           const char *Text, bool Recurrent) {
  auto Config = RunnerConfig::parse(Text);
  if (!Config)
    return Config.takeError();
  RunnerFactories Factories = RunnerFactories::core();
#ifdef MLBRIDGE_EXAMPLE_HAVE_ONNX
  addOnnxRunners(Factories);
#endif
  auto Runner = Recurrent ? createRunner(*Config, floats({"obs", "h_in"}),
                                         floats({"logits", "h_out"}), Factories)
                          : createRunner(*Config, floats({"obs"}),
                                         floats({"logits"}), Factories);
  if (!Runner)
    return Runner.takeError();
  std::vector<RecurrentState> State;
  if (Recurrent)
    State.push_back({"h_in", "h_out"});
  return Agent::create(Name, std::move(*Runner), "logits", ActionKind::Discrete,
                       std::move(State));
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s UNROLL_RUNNER VECTORIZE_RUNNER [LOOPS]\n",
                 argv[0]);
    return 2;
  }
  long Count = argc == 4 ? std::strtol(argv[3], nullptr, 10) : 12;
  if (Count < 1 || Count > 1000) {
    std::fprintf(stderr, "LOOPS must be in [1, 1000]\n");
    return 2;
  }
  auto Unroll = makeAgent("unroll", argv[1], /*Recurrent=*/true);
  auto Vectorize = makeAgent("vectorize", argv[2], /*Recurrent=*/false);
  for (auto *A : {&Unroll, &Vectorize})
    if (!*A) {
      std::fprintf(stderr, "cannot make an agent: %s\n",
                   A->error().toString().c_str());
      return 1;
    }

  std::vector<Loop> Loops;
  for (long I = 0; I < Count; ++I)
    Loops.push_back({8 + 12 * (I % 7), 3 + 5 * (I % 4)});
  LoopSchedule Schedule(std::move(Loops));
  Driver D(Schedule, {Unroll->get(), Vectorize->get()});
  for (int Episode = 0; Episode < 2; ++Episode) {
    auto Stats = D.runEpisode(2 * size_t(Count));
    if (!Stats) {
      // A pass would leave these loops to the compiler's heuristics.
      std::fprintf(stderr, "episode %d failed: %s\n", Episode,
                   Stats.error().toString().c_str());
      return 1;
    }
    std::printf("episode %d: %zu steps, reward unroll %.1f vectorize %.1f\n",
                Episode, Stats->Steps, Stats->Rewards[0], Stats->Rewards[1]);
  }
  for (size_t I = 0; I < Schedule.loops().size(); ++I)
    std::printf("loop %zu (trip %lld, body %lld): %s%s\n", I,
                static_cast<long long>(Schedule.loops()[I].TripCount),
                static_cast<long long>(Schedule.loops()[I].BodyInstructions),
                Schedule.unrolled(I) ? "unroll x2" : "no unroll",
                Schedule.vectorized(I) ? ", vectorize x4" : "");
  return 0;
}

//===- rl/MultiAgent.cpp - Multi-agent RL in-process ----------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/MultiAgent.h"

#include "codec/DTypeDispatch.h"

#include <cstring>

namespace mlbridge {

namespace {
struct ArgMax {
  template <typename T> int64_t operator()(const void *Data, size_t N) const {
    const T *P = static_cast<const T *>(Data);
    size_t Best = 0;
    for (size_t I = 1; I < N; ++I)
      if (P[I] > P[Best])
        Best = I;
    return int64_t(Best);
  }
};
} // namespace

Environment::~Environment() = default;

Expected<std::unique_ptr<Agent>>
Agent::create(std::string Name, std::unique_ptr<ModelRunner> Runner,
              std::string ActionOutput, ActionKind Kind,
              std::vector<RecurrentState> State) {
  if (!Runner)
    return makeError(ErrorCode::InvalidArgument, "agent '", Name,
                     "' has no model");
  std::unique_ptr<Agent> A(new Agent());
  A->Name = std::move(Name);
  A->Kind = Kind;
  auto Out = Runner->outputIndex(ActionOutput);
  if (!Out)
    return makeError(ErrorCode::InvalidArgument, "agent '", A->Name,
                     "': the model has no output '", ActionOutput, "'");
  const TensorSpec &AS = Runner->outputSpec(*Out);
  if (AS.elementCount() == 0)
    return makeError(ErrorCode::InvalidArgument, "agent '", A->Name,
                     "': action output '", ActionOutput, "' is empty");
  if (Kind == ActionKind::Continuous && AS.type() != DType::Float)
    return makeError(ErrorCode::TypeMismatch, "agent '", A->Name,
                     "': a continuous action needs a float output, '",
                     ActionOutput, "' is ", dtypeName(AS.type()));
  A->ActionIndex = *Out;
  for (const RecurrentState &S : State) {
    auto In = Runner->inputIndex(S.Input);
    if (!In)
      return In.takeError().withContext("agent '" + A->Name + "' state");
    auto O = Runner->outputIndex(S.Output);
    if (!O)
      return makeError(ErrorCode::InvalidArgument, "agent '", A->Name,
                       "': no state output '", S.Output, "'");
    const TensorSpec &IS = Runner->inputSpec(*In);
    const TensorSpec &OS = Runner->outputSpec(*O);
    if (IS.type() != OS.type() || IS.byteSize() != OS.byteSize())
      return makeError(ErrorCode::TypeMismatch, "agent '", A->Name,
                       "': state output '", S.Output, "' (",
                       dtypeName(OS.type()), ", ",
                       std::to_string(OS.elementCount()),
                       " elements) cannot feed state input '", S.Input, "' (",
                       dtypeName(IS.type()), ", ",
                       std::to_string(IS.elementCount()), " elements)");
    A->StateLinks.emplace_back(*In, *O);
  }
  A->Runner = std::move(Runner);
  A->resetState();
  return A;
}

void Agent::resetState() {
  for (const auto &[In, Out] : StateLinks)
    std::memset(Runner->inputData(In), 0, Runner->inputSpec(In).byteSize());
}

Expected<Action> Agent::act() {
  if (Error E = Runner->evaluate())
    return E.withContext("agent '" + Name + "'");
  for (const auto &[In, Out] : StateLinks)
    std::memcpy(Runner->inputData(In), Runner->outputData(Out),
                Runner->inputSpec(In).byteSize());
  const TensorSpec &S = Runner->outputSpec(ActionIndex);
  Action A;
  A.Kind = Kind;
  if (Kind == ActionKind::Discrete) {
    A.Index = dispatchDType(S.type(), ArgMax(), Runner->outputData(ActionIndex),
                            S.elementCount());
  } else {
    A.Values = TensorView<float>{
        static_cast<const float *>(Runner->outputData(ActionIndex)),
        S.elementCount()};
  }
  return A;
}

Expected<EpisodeStats> Driver::runEpisode(size_t MaxSteps) {
  EpisodeStats Stats;
  Stats.Rewards.assign(Agents.size(), 0.0);
  if (Error E = Env.reset())
    return E.withContext("environment reset");
  for (Agent *A : Agents)
    A->resetState();
  while (!Env.done() && Stats.Steps < MaxSteps) {
    size_t Who = Env.nextAgent();
    if (Who >= Agents.size())
      return makeError(ErrorCode::InvalidArgument,
                       "the environment named agent ", std::to_string(Who),
                       " of ", std::to_string(Agents.size()));
    Agent &A = *Agents[Who];
    if (Error E = Env.observe(Who, A.runner()))
      return E.withContext("observing for agent '" + A.name() + "'");
    auto Act = A.act();
    if (!Act)
      return Act.takeError();
    auto Reward = Env.step(Who, *Act);
    if (!Reward)
      return Reward.takeError().withContext("step of agent '" + A.name() + "'");
    Stats.Rewards[Who] += *Reward;
    ++Stats.Steps;
  }
  return Stats;
}

} // namespace mlbridge

//===- mlbridge/MultiAgent.h - Multi-agent RL in-process --------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Multi-agent reinforcement-learning policies run inside the compiler: an
/// Environment (the compiler's problem: reset, which agent acts next, its
/// observation, the effect of an action), Agents (each owning a model
/// through any ModelRunner, e.g. OnnxModelRunner), and a Driver that runs the
/// loop. Actions are discrete (argmax of an output) or continuous (an output's
/// values). Recurrent state is carried from step to step: each declared
/// (state input, state output) pair copies the output into the input after
/// every step, starting from zeros at reset; nothing is ever fed a dummy.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_MULTIAGENT_H
#define MLBRIDGE_MULTIAGENT_H

#include "mlbridge/ModelRunner.h"

#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

/// How an agent turns its model's output into an action.
enum class ActionKind {
  /// The index of the largest element of the action output.
  Discrete,
  /// The action output's values themselves (float).
  Continuous,
};

/// One agent's decision.
struct Action {
  /// Discrete or continuous.
  ActionKind Kind = ActionKind::Discrete;
  /// The chosen index (Discrete).
  int64_t Index = 0;
  /// The values (Continuous); valid until the agent acts again.
  TensorView<float> Values;
};

/// The problem the agents act on. Implemented by the compiler pass.
class Environment {
public:
  virtual ~Environment();
  /// Starts a new episode.
  virtual Error reset() = 0;
  /// True when the episode is over.
  virtual bool done() const = 0;
  /// Index of the agent that acts next.
  virtual size_t nextAgent() const = 0;
  /// Writes agent \p AgentIndex's observation into \p Runner's inputs.
  virtual Error observe(size_t AgentIndex, ModelRunner &Runner) = 0;
  /// Applies \p A by agent \p AgentIndex; returns the reward.
  virtual Expected<double> step(size_t AgentIndex, const Action &A) = 0;
};

/// Declares that output \p Output feeds input \p Input at the next step.
struct RecurrentState {
  /// The state input of the model.
  std::string Input;
  /// The state output of the model.
  std::string Output;
};

/// An agent: a model plus how to read its action and carry its state.
class Agent {
public:
  /// Checks the names, types and sizes against the runner's specs.
  static Expected<std::unique_ptr<Agent>>
  create(std::string Name, std::unique_ptr<ModelRunner> Runner,
         std::string ActionOutput, ActionKind Kind,
         std::vector<RecurrentState> State = {});

  /// The agent's name (for errors and statistics).
  const std::string &name() const { return Name; }
  /// The model; the environment writes observations into its inputs.
  ModelRunner &runner() { return *Runner; }
  /// Zeroes the recurrent state (start of an episode).
  void resetState();
  /// Evaluates the model on the current inputs, carries the recurrent
  /// state, and returns the action.
  Expected<Action> act();

private:
  Agent() = default;
  std::string Name;
  std::unique_ptr<ModelRunner> Runner;
  size_t ActionIndex = 0;
  ActionKind Kind = ActionKind::Discrete;
  std::vector<std::pair<size_t, size_t>> StateLinks; // input, output
};

/// What one episode did.
struct EpisodeStats {
  /// Steps taken.
  size_t Steps = 0;
  /// Sum of the rewards, per agent.
  std::vector<double> Rewards;
};

/// Runs episodes: reset, then observe/act/step with the agent the
/// environment names, until it is done or \p MaxSteps steps were taken.
class Driver {
public:
  /// Agents are indexed as the environment's nextAgent() expects.
  Driver(Environment &Env, std::vector<Agent *> Agents)
      : Env(Env), Agents(std::move(Agents)) {}
  /// Runs one episode; an error from any part stops it (the compiler then
  /// falls back to its default heuristic).
  Expected<EpisodeStats> runEpisode(size_t MaxSteps);

private:
  Environment &Env;
  std::vector<Agent *> Agents;
};

} // namespace mlbridge

#endif // MLBRIDGE_MULTIAGENT_H

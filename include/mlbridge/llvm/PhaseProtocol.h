//===- mlbridge/llvm/PhaseProtocol.h - Phase-ordering service ---*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The protocol of the phase-ordering service (`mlbridge-phase-service`,
/// docs/phase-ordering.md, "Service protocol"): a compiler that asks an
/// mlbridge runner what to do with a phase::Session at every turn. The
/// observation goes into the runner's inputs, evaluate() is the question,
/// the runner's outputs are the answer.
///
/// Inputs (the observation), all int64, in this order:
///
///   autophase           [56] Autophase features of the current module
///   instcount           [1]  its instruction count
///   initial_instcount   [1]  the count when the module was loaded
///   baseline_instcount  [1]  the count after default<Oz> on the loaded one
///   status              [1]  what the last command did (Status)
///   module              [1]  index of the loaded module, -1 before any
///   steps               [1]  actions applied since load/reset
///
/// Before any module is loaded every input is 0 except module (-1). The
/// runner's context (switchContext) is the module's path after a command
/// that succeeded (status 0) and the error's text otherwise; it is switched
/// only when that text changes (so observation numbers restart then).
///
/// Training (serveTraining): outputs `command` [1] and `argument` [1],
/// int64; a Command with its argument. The very first observation is sent
/// before any module is loaded. A command that cannot be carried out
/// changes nothing and answers with its Status and the error as context.
///
/// Deployment (chooseSequence): output `action` [1], int64: the index of
/// the next action; a negative index, or actions().size() (or more), means
/// stop.
///
/// Part of the optional mlbridge_llvm library.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_LLVM_PHASEPROTOCOL_H
#define MLBRIDGE_LLVM_PHASEPROTOCOL_H

#include "mlbridge/Error.h"
#include "mlbridge/ModelRunner.h"
#include "mlbridge/TensorSpec.h"
#include "mlbridge/llvm/PhaseOrdering.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace mlbridge::phase {

/// Version of the service protocol (in describeService()).
inline constexpr int ProtocolVersion = 1;

/// What the model tells the service to do (output `command`).
enum class Command : int64_t {
  /// Apply action `argument` (an index into actions()).
  Apply = 0,
  /// Load module `argument` (an index into the list of modules); drops the
  /// snapshots. A failed load keeps the module loaded before.
  Load = 1,
  /// Back to the current module as loaded (steps 0); snapshots are kept.
  Reset = 2,
  /// Copy the current state into slot `argument` (0..7).
  Snapshot = 3,
  /// Make a copy of slot `argument` the current state.
  Restore = 4,
  /// Stop serving; the service exits with status 0. No observation follows.
  End = 5,
  /// Write the current module as bitcode to the service's --output file.
  Write = 6,
};

/// What the last command did (input `status`).
enum class Status : int64_t {
  /// Done.
  Ok = 0,
  /// Unknown command, or an argument out of range (action, module index,
  /// slot) or an empty slot; nothing changed.
  InvalidCommand = 1,
  /// The action broke the module (verifier) or reported an error; the
  /// module is back in its state before the step.
  ActionFailed = 2,
  /// The module could not be read, parsed or verified; the module loaded
  /// before (if any) is still the current one.
  LoadFailed = 3,
  /// The command needs a module and none is loaded.
  NoModule = 4,
  /// The module could not be written (or no --output file was given).
  WriteFailed = 5,
};

/// Names of the input tensors, in order.
inline constexpr const char *AutophaseInput = "autophase";
/// See AutophaseInput.
inline constexpr const char *InstCountInput = "instcount";
/// See AutophaseInput.
inline constexpr const char *InitialInstCountInput = "initial_instcount";
/// See AutophaseInput.
inline constexpr const char *BaselineInstCountInput = "baseline_instcount";
/// See AutophaseInput.
inline constexpr const char *StatusInput = "status";
/// See AutophaseInput.
inline constexpr const char *ModuleInput = "module";
/// See AutophaseInput.
inline constexpr const char *StepsInput = "steps";

/// The inputs (observation), in the order of the file comment.
std::vector<TensorSpec> observationSpecs();
/// The outputs in training: `command`, `argument`.
std::vector<TensorSpec> commandSpecs();
/// The output in deployment: `action`.
std::vector<TensorSpec> actionSpecs();

/// The values of one observation, in the order of observationSpecs().
struct Observation {
  autophase::FeatureVector Features{};
  int64_t Count = 0, Initial = 0, Baseline = 0;
  int64_t StatusCode = 0, Module = -1, Steps = 0;

  /// The observation of \p S after a command of status \p St, with the
  /// module index \p Module (-1 when \p S holds no module).
  static Observation of(const Session &S, Status St, int64_t Module);
};

/// Writes observations into a runner's inputs.
class ObservationWriter {
public:
  /// Finds the inputs of observationSpecs() in \p Runner (by name); an
  /// error names one that is missing or of another type or size.
  static Expected<ObservationWriter> bind(ModelRunner &Runner);
  /// Fills the inputs from \p S, \p St and the module index \p Module.
  void write(const Session &S, Status St, int64_t Module) const;
  /// Fills the inputs with \p O.
  void write(const Observation &O) const;

private:
  ObservationWriter() = default;
  int64_t *Features = nullptr;
  int64_t *Count = nullptr;
  int64_t *Initial = nullptr;
  int64_t *Baseline = nullptr;
  int64_t *StatusCode = nullptr;
  int64_t *ModuleIndex = nullptr;
  int64_t *Steps = nullptr;
};

/// What the training service serves.
struct TrainingOptions {
  /// The modules LOAD chooses from (paths of bitcode or textual IR).
  std::vector<std::string> Modules;
  /// Where WRITE writes the current module ("": WRITE fails).
  std::string Output;
  /// The longest one command may take; past it the worker carrying it out
  /// is stopped and the command fails as a crash does.
  std::chrono::milliseconds StepTimeout = std::chrono::hours(1);
};

/// Serves the training protocol on \p Runner (made with observationSpecs()
/// and commandSpecs()) until the END command (success) or a runner error
/// (returned: a timeout, the peer gone, a reply of the wrong shape).
/// Commands run on a copy of \p S in a child process (\p S itself is never
/// changed): when LLVM crashes on a module (loading it or applying an
/// action), the command fails (LoadFailed, ActionFailed, WriteFailed or
/// InvalidCommand, the context saying how the child ended), no module is
/// loaded any more, and the next command runs in a fresh child.
Error serveTraining(ModelRunner &Runner, Session &S, const TrainingOptions &O);

/// How chooseSequence ended.
struct DeploymentResult {
  /// Actions the runner chose and the session applied (failed ones
  /// included).
  int64_t Steps = 0;
  /// Chosen actions that broke the module (each rolled back).
  int64_t FailedSteps = 0;
  /// The last such failure.
  Error LastFailure;
  /// The runner's error that made the service fall back to default<Oz>;
  /// success when the runner chose until it stopped or MaxSteps.
  Error RunnerError;
};

/// Lets \p Runner (made with observationSpecs() and actionSpecs()) choose
/// up to \p MaxSteps actions for the module loaded in \p S (reported as
/// module 0). When the runner fails (or \p Runner is null), default<Oz> is
/// applied once instead of the rest of the sequence, and RunnerError says
/// why.
DeploymentResult chooseSequence(ModelRunner *Runner, Session &S,
                                int64_t MaxSteps);

/// The service's description, one JSON object: actions (name, pipeline),
/// default_action, features, commands, statuses, snapshot_slots, inputs,
/// outputs, deploy_outputs (specs in LLVM's JSON form), protocol_version.
std::string describeService();

} // namespace mlbridge::phase

#endif // MLBRIDGE_LLVM_PHASEPROTOCOL_H

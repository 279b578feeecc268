//===- llvm/PhaseTrainer.h - Training commands on a session -----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: what the training service does with one command of its peer
/// (a Command and its argument, any two int64) on a phase::Session, and the
/// status and context of the observation that follows. serveTraining runs
/// it in a PhaseWorker; the fuzz target fuzz_phase_commands runs it
/// in-process, checking the session's state after every command.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_PHASETRAINER_H
#define MLBRIDGE_SRC_LLVM_PHASETRAINER_H

#include "mlbridge/Error.h"
#include "mlbridge/llvm/PhaseProtocol.h"

#include <cstdint>
#include <string>

namespace mlbridge::phase {

/// The training service's state between commands: the session it changes,
/// the status of the last command and the index of the loaded module.
class Trainer {
public:
  /// Works on \p S with the modules and output file of \p O (both must
  /// outlive the trainer).
  Trainer(Session &S, const TrainingOptions &O) : S(S), O(O) {}

  /// Carries out command \p C with argument \p Arg; returns true on END. A
  /// command that cannot be carried out changes nothing (a failed action
  /// leaves the module as Session::apply does) and sets status() and the
  /// context to say why.
  bool run(int64_t C, int64_t Arg);
  /// What the last command did.
  Status status() const { return St; }
  /// The context of the next observation: the module's name after a
  /// command that succeeded, the error's text otherwise.
  const std::string &context() const {
    return St == Status::Ok ? S.moduleName() : Why;
  }
  /// Index of the loaded module (-1 before any LOAD succeeded).
  int64_t module() const { return Module; }

private:
  void fail(Status Code, Error E);
  void done() { St = Status::Ok; }
  /// Ok, or the status of an error of a command that needs a module.
  void check(Error E, Status OnFailure);

  Session &S;
  const TrainingOptions &O;
  Status St = Status::Ok;
  std::string Why;
  int64_t Module = -1;
};

} // namespace mlbridge::phase

#endif // MLBRIDGE_SRC_LLVM_PHASETRAINER_H

//===- llvm/PhaseWorker.h - Training commands in a child process -*- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: the training service carries out its commands in a child
/// process forked from it, so that a module that crashes LLVM (its parser
/// overflowing the stack, a pass dereferencing null) costs the episode, not
/// the service. The child holds the module between commands; the parent
/// holds the runner and never loads a module, so a fresh child forked after
/// a crash starts clean. A command and its observation cross a socketpair
/// (one datagram each way, a few microseconds beside a pass).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_PHASEWORKER_H
#define MLBRIDGE_SRC_LLVM_PHASEWORKER_H

#include "mlbridge/Error.h"
#include "mlbridge/llvm/PhaseProtocol.h"

#include <chrono>
#include <functional>
#include <string>

namespace mlbridge::phase {

/// What one command did, as the child reports it.
struct WorkerReply {
  Observation Obs;
  /// The command was END.
  bool End = false;
  /// The observation's context (truncated to MaxContextBytes).
  std::string Context;
};

/// A forked child carrying out commands with a handler that reads and
/// changes the state it inherited at the fork.
class PhaseWorker {
public:
  /// Longest context a reply carries.
  static constexpr size_t MaxContextBytes = 4096;
  using Handler = std::function<WorkerReply(int64_t Command, int64_t Arg)>;

  /// \p Run carries out a command in the child; \p Timeout bounds one.
  PhaseWorker(Handler Run, std::chrono::milliseconds Timeout);
  /// Stops the child (SIGKILL) and reaps it.
  ~PhaseWorker();
  PhaseWorker(const PhaseWorker &) = delete;
  PhaseWorker &operator=(const PhaseWorker &) = delete;

  /// Carries out \p Command in the child (forked first when none runs). A
  /// child that dies (a signal, an exit) or overruns the deadline is an
  /// error saying so; it is stopped, and the next command gets a new child.
  Expected<WorkerReply> run(int64_t Command, int64_t Arg);

private:
  Error start();
  void stop();
  [[noreturn]] void serve(int Socket);

  Handler Run;
  std::chrono::milliseconds Timeout;
  int Pid = -1, Socket = -1;
};

} // namespace mlbridge::phase

#endif // MLBRIDGE_SRC_LLVM_PHASEWORKER_H

//===- llvm/PhaseTrainer.cpp - Training commands on a session -------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PhaseTrainer.h"

#include <string>
#include <utility>

namespace mlbridge::phase {

void Trainer::fail(Status Code, Error E) {
  St = Code;
  Why = E.message();
}

void Trainer::check(Error E, Status OnFailure) {
  if (!E)
    return done();
  Status Code = E.code() == ErrorCode::InvalidArgument ? Status::InvalidCommand
                                                       : OnFailure;
  fail(Code, std::move(E));
}

bool Trainer::run(int64_t C, int64_t Arg) {
  auto Cmd = static_cast<Command>(C);
  bool NeedsModule = Cmd == Command::Apply || Cmd == Command::Reset ||
                     Cmd == Command::Snapshot || Cmd == Command::Restore ||
                     Cmd == Command::Write;
  if (NeedsModule && !S.hasModule()) {
    fail(Status::NoModule,
         makeError(ErrorCode::InvalidArgument, "command ", std::to_string(C),
                   " needs a module: LOAD one first"));
    return false;
  }
  switch (Cmd) {
  case Command::Apply:
    check(S.apply(Arg), Status::ActionFailed);
    return false;
  case Command::Load:
    if (Arg < 0 || Arg >= static_cast<int64_t>(O.Modules.size())) {
      fail(Status::InvalidCommand,
           makeError(ErrorCode::InvalidArgument, "no module #",
                     std::to_string(Arg), " (",
                     std::to_string(O.Modules.size()), " modules)"));
      return false;
    }
    if (Error E = S.loadFile(O.Modules[static_cast<size_t>(Arg)])) {
      fail(Status::LoadFailed, std::move(E));
      return false;
    }
    Module = Arg;
    done();
    return false;
  case Command::Reset:
    check(S.reset(), Status::InvalidCommand);
    return false;
  case Command::Snapshot:
    check(S.snapshot(Arg), Status::InvalidCommand);
    return false;
  case Command::Restore:
    check(S.restore(Arg), Status::InvalidCommand);
    return false;
  case Command::End:
    return true;
  case Command::Write:
    if (O.Output.empty())
      fail(Status::WriteFailed,
           makeError(ErrorCode::InvalidArgument,
                     "WRITE needs an output file (--output)"));
    else if (Error E = S.writeBitcode(O.Output))
      fail(Status::WriteFailed, std::move(E));
    else
      done();
    return false;
  }
  fail(Status::InvalidCommand,
       makeError(ErrorCode::InvalidArgument, "unknown command ",
                 std::to_string(C), " (0..6)"));
  return false;
}

} // namespace mlbridge::phase

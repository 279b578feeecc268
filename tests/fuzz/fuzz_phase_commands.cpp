//===- fuzz_phase_commands.cpp - Fuzz the phase service's commands --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The training peer of the phase-ordering service sends one (command,
// argument) pair per turn, any two int64 (docs/phase-ordering.md, "Service
// protocol"). The input is a sequence of such pairs, carried out by the
// service's own Trainer (src/llvm/PhaseTrainer.h) in-process on a
// Session over a fixed list of modules: bitcode, the same as textual IR,
// another module, an empty one, then a file that does not parse, truncated
// bitcode and a missing path. After every command the target checks the session
// against a model of the protocol:
//
//  - the status is the one the protocol gives for that command, argument and
//    state (NO_MODULE, INVALID_COMMAND for arguments out of range and empty
//    slots, LOAD_FAILED for the three broken entries);
//  - a command that fails changes nothing: the module (its structural hash,
//    instruction count and features), steps and module index are those
//    before it;
//  - LOAD gives steps 0 and the module as loaded (the same every time),
//    RESET the module as loaded with the snapshots kept, APPLY steps + 1,
//    RESTORE exactly what SNAPSHOT saved in that slot (IR and steps), and a
//    LOAD empties every slot;
//  - WRITE writes bitcode.
//
// Crashes in LLVM itself are out of scope here (the service survives them in
// a PhaseWorker, tests/llvm/PhaseWorkerTest.cpp); this target looks for
// mistakes of mlbridge's session: rollback, snapshots, state after errors.
//
//===----------------------------------------------------------------------===//

#include "PhaseTestSupport.h"
#include "llvm/PhaseTrainer.h"

#include "mlbridge/llvm/PhaseOrdering.h"
#include "mlbridge/llvm/PhaseProtocol.h"

#include "llvm/IR/StructuralHash.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace mlbridge;
using namespace mlbridge::phase;

namespace {

/// A second module, unlike LoopModule: a switch, recursion, a string.
constexpr const char *SwitchModule = R"IR(
@msg = private unnamed_addr constant [6 x i8] c"hello\00"

define internal i32 @fact(i32 %n) {
entry:
  %n.addr = alloca i32
  store i32 %n, ptr %n.addr
  %0 = load i32, ptr %n.addr
  %c = icmp sle i32 %0, 1
  br i1 %c, label %base, label %rec
base:
  ret i32 1
rec:
  %1 = load i32, ptr %n.addr
  %m = sub nsw i32 %1, 1
  %r = call i32 @fact(i32 %m)
  %p = mul nsw i32 %1, %r
  ret i32 %p
}

define i32 @pick(i32 %k) {
entry:
  switch i32 %k, label %other [ i32 0, label %zero
                                i32 1, label %one
                                i32 2, label %two ]
zero:
  %z = call i32 @fact(i32 5)
  br label %done
one:
  %o = load i8, ptr @msg
  %oz = zext i8 %o to i32
  br label %done
two:
  %t = add i32 %k, 40
  br label %done
other:
  br label %done
done:
  %v = phi i32 [ %z, %zero ], [ %oz, %one ], [ %t, %two ], [ 0, %other ]
  ret i32 %v
}
)IR";

/// Number of module entries that load; the rest fail to.
constexpr int64_t GoodModules = 4;

/// The files LOAD chooses from and WRITE's output, in a private directory
/// kept for the whole run.
struct Files {
  phase_test::TempDir Dir;
  TrainingOptions Options;

  Files() {
    std::string Bitcode = phase_test::toBitcode(phase_test::LoopModule);
    if (Bitcode.empty()) {
      std::fprintf(stderr, "fuzz_phase_commands: LoopModule does not parse\n");
      std::abort();
    }
    Options.Modules = {
        Dir.write("loop.bc", Bitcode), // first: every input loads it
        Dir.write("loop.ll", phase_test::LoopModule),
        Dir.write("switch.ll", SwitchModule),
        Dir.write("empty.ll", ""), // a module without functions
        Dir.write("broken.ll", "define i32 @f( {\n"),
        Dir.write("truncated.bc", Bitcode.substr(0, Bitcode.size() / 2)),
        Dir.path("missing.ll"),
    };
    Options.Output = Dir.path("out.bc");
  }
};

const Files &files() {
  static const Files F;
  return F;
}

[[noreturn]] void finding(const std::string &What) {
  std::fprintf(stderr, "fuzz_phase_commands: %s\n", What.c_str());
  std::abort();
}

/// What the model remembers of a module state: a fingerprint of the IR
/// (LLVM's detailed structural hash: opcodes, types, operands, constants),
/// its instruction count and features, and the step count.
struct State {
  uint64_t IR = 0;
  int64_t Count = 0;
  autophase::FeatureVector Features{};
  int64_t Steps = 0;
  bool operator==(const State &O) const {
    return IR == O.IR && Count == O.Count && Features == O.Features &&
           Steps == O.Steps;
  }
};

State stateOf(const Session &S) {
  if (!S.hasModule())
    return State{};
  return State{llvm::StructuralHash(*S.module(), /*DetailedHash=*/true),
               S.instructionCount(), S.features(), S.steps()};
}

/// The model of the service: which module is loaded, its IR as loaded, and
/// what each snapshot slot holds.
struct Model {
  int64_t Module = -1;
  State Loaded;
  std::array<std::optional<State>, NumSnapshotSlots> Slots;
  /// The IR of each module as loaded, once seen: a LOAD is deterministic.
  std::array<std::optional<uint64_t>, GoodModules> LoadedIR;
};

bool needsModule(Command C) {
  return C == Command::Apply || C == Command::Reset || C == Command::Snapshot ||
         C == Command::Restore || C == Command::Write;
}

bool inRange(int64_t V, int64_t End) { return V >= 0 && V < End; }

/// The status the protocol requires for \p C with \p Arg in the state \p M,
/// or nothing when it depends on what LLVM does (APPLY of a valid action,
/// WRITE).
std::optional<Status> expected(int64_t C, int64_t Arg, const Model &M) {
  if (!inRange(C, 7))
    return Status::InvalidCommand;
  auto Cmd = static_cast<Command>(C);
  if (needsModule(Cmd) && M.Module < 0)
    return Status::NoModule;
  const auto Slots = static_cast<int64_t>(NumSnapshotSlots);
  switch (Cmd) {
  case Command::Apply:
    if (!inRange(Arg, static_cast<int64_t>(actions().size())))
      return Status::InvalidCommand;
    return std::nullopt;
  case Command::Load:
    if (!inRange(Arg, static_cast<int64_t>(files().Options.Modules.size())))
      return Status::InvalidCommand;
    return Arg < GoodModules ? Status::Ok : Status::LoadFailed;
  case Command::Reset:
    return Status::Ok;
  case Command::End:
    return std::nullopt; // no observation follows
  case Command::Snapshot:
    return inRange(Arg, Slots) ? Status::Ok : Status::InvalidCommand;
  case Command::Restore:
    return inRange(Arg, Slots) && M.Slots[static_cast<size_t>(Arg)]
               ? Status::Ok
               : Status::InvalidCommand;
  case Command::Write:
    return std::nullopt;
  }
  return Status::InvalidCommand;
}

/// Checks the state after command \p C (\p Arg) that ended with \p St, from
/// \p Before; updates the model.
void check(int64_t C, int64_t Arg, Status St, const State &Before,
           const Session &S, const Trainer &T, Model &M) {
  std::string Turn =
      "command " + std::to_string(C) + " argument " + std::to_string(Arg);
  if (std::optional<Status> Want = expected(C, Arg, M); Want && St != *Want)
    finding(Turn + ": status " + std::to_string(static_cast<int64_t>(St)) +
            ", the protocol says " +
            std::to_string(static_cast<int64_t>(*Want)) + " (" + T.context() +
            ")");
  State After = stateOf(S);
  if (St != Status::Ok) {
    if (!(After == Before) || T.module() != M.Module ||
        S.hasModule() != (M.Module >= 0))
      finding(Turn + " failed but changed the session");
    if (T.context().empty())
      finding(Turn + " failed without saying why");
    return;
  }
  auto Slot = static_cast<size_t>(Arg);
  switch (static_cast<Command>(C)) {
  case Command::Apply:
    if (After.Steps != Before.Steps + 1)
      finding(Turn + ": steps did not grow by one");
    break;
  case Command::Load: {
    auto &Seen = M.LoadedIR[Slot];
    if (After.Steps != 0 || T.module() != Arg ||
        After.Count != S.initialInstructionCount() ||
        (Seen && *Seen != After.IR))
      finding(Turn + ": not the module as loaded");
    Seen = After.IR;
    M.Module = Arg;
    M.Loaded = After;
    M.Slots = {};
    break;
  }
  case Command::Reset:
    if (!(After == M.Loaded))
      finding(Turn + ": RESET is not the module as loaded");
    break;
  case Command::Snapshot:
    if (!(After == Before))
      finding(Turn + ": SNAPSHOT changed the module");
    M.Slots[Slot] = After;
    break;
  case Command::Restore:
    if (!(After == *M.Slots[Slot]))
      finding(Turn + ": RESTORE is not what SNAPSHOT saved");
    break;
  case Command::Write: {
    if (!(After == Before))
      finding(Turn + ": WRITE changed the module");
    std::ifstream In(files().Options.Output, std::ios::binary);
    char Magic[2] = {};
    if (!In.read(Magic, 2) || Magic[0] != 'B' || Magic[1] != 'C')
      finding(Turn + ": WRITE did not write bitcode");
    break;
  }
  case Command::End: // handled by the caller
    break;
  }
  if (S.hasModule() != (M.Module >= 0) || T.module() != M.Module)
    finding(Turn + ": the module index is wrong");
}

/// The next command: mostly the seven known ones, sometimes any int64.
int64_t nextCommand(FuzzedDataProvider &In) {
  int Choice = In.ConsumeIntegralInRange<int>(0, 7);
  return Choice < 7 ? Choice : In.ConsumeIntegral<int64_t>();
}

/// The next argument: mostly near the valid ranges, sometimes any int64.
int64_t nextArgument(FuzzedDataProvider &In) {
  if (In.ConsumeBool())
    return In.ConsumeIntegral<int64_t>();
  return In.ConsumeIntegralInRange<int64_t>(-2, 70);
}

/// Commands carried out per input at most (each may run a pipeline): the
/// protocol's states are all a few commands apart, and short inputs keep
/// the executions per second up.
constexpr int MaxCommands = 12;

/// The session most inputs start from: created once (creating one parses
/// the action table), then brought to the same state by LOAD 0 at the start
/// of each input, so that an input's outcome does not depend on the inputs
/// before it (the session's baseline cache only saves time).
Session &sharedSession() {
  static std::unique_ptr<Session> S = [] {
    Expected<std::unique_ptr<Session>> Made = Session::create();
    if (!Made)
      finding("Session::create: " + Made.takeError().message());
    return std::move(*Made);
  }();
  return *S;
}

/// Carries out \p C with \p Arg and checks the outcome; true on END.
bool turn(int64_t C, int64_t Arg, Session &S, Trainer &T, Model &M) {
  State Before = stateOf(S);
  bool End = T.run(C, Arg);
  if (End != (C == static_cast<int64_t>(Command::End)))
    finding("END is the only command that ends the service");
  if (End) {
    if (!(stateOf(S) == Before))
      finding("END changed the module");
    return true;
  }
  check(C, Arg, T.status(), Before, S, T, M);
  // The observation the peer would get is the session's (and within the
  // documented ranges).
  Observation O = Observation::of(S, T.status(), T.module());
  if (O.Module != M.Module || O.Steps < 0 || O.Count < 0)
    finding("observation out of range");
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  const Files &F = files();
  FuzzedDataProvider In(Data, Size);
  // One input in 16 starts from a new session, without a module (the
  // commands that need one); the others from module 0 freshly loaded.
  std::unique_ptr<Session> Fresh;
  if (In.ConsumeIntegralInRange<int>(0, 15) == 0) {
    Expected<std::unique_ptr<Session>> Made = Session::create();
    if (!Made)
      finding("Session::create: " + Made.takeError().message());
    Fresh = std::move(*Made);
  }
  Session &S = Fresh ? *Fresh : sharedSession();
  Trainer T(S, F.Options);
  Model M;
  if (!Fresh)
    turn(static_cast<int64_t>(Command::Load), 0, S, T, M);
  for (int I = 0; I < MaxCommands && In.remaining_bytes() > 0; ++I) {
    int64_t C = nextCommand(In);
    int64_t Arg = nextArgument(In);
    if (turn(C, Arg, S, T, M))
      break;
  }
  return 0;
}

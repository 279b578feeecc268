//===- mlbridge/llvm/PhaseOrdering.h - Phase ordering -----------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The compiler half of a phase-ordering environment (CompilerGym's llvm-v0,
/// POSET-RL): a Session holds one LLVM module between steps and applies one
/// action at a time, an LLVM 19 new-pass-manager pipeline from a fixed,
/// documented table (actions()). It also keeps the module as loaded (reset),
/// up to NumSnapshotSlots copies of the current state (fork), and the
/// instruction count `default<Oz>` reaches from the loaded module (the
/// baseline a policy competes with).
///
/// Loading reads bitcode (or textual IR) of at most
/// SessionOptions::MaxInputBytes into a fresh LLVMContext, verifies it, and
/// creates the TargetMachine of the module's triple when LLVM has that
/// target (so target-dependent passes see the same costs as in opt-19); a
/// module without a triple, or of a target LLVM lacks, is optimised with
/// LLVM's target-independent defaults.
///
/// Every step is verified (llvm::verifyModule). An action that breaks the
/// module, or that reports an error diagnostic, is undone: the module goes
/// back to its state before the step (SessionOptions::Rollback), and the
/// step fails with ErrorCode::Broken; the session stays usable. Errors:
/// InvalidArgument for a caller's mistake (unknown action, slot, no module),
/// nothing changed; IO and TooLarge for files; Broken for a failed step.
/// Nothing is printed (LLVM's diagnostics are caught), nothing exits.
///
/// Not thread-safe; one session per thread. Part of the optional
/// mlbridge_llvm library.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_LLVM_PHASEORDERING_H
#define MLBRIDGE_LLVM_PHASEORDERING_H

#include "mlbridge/Error.h"
#include "mlbridge/llvm/Autophase.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace mlbridge::phase {

/// One action of the environment.
struct Action {
  /// Stable name: the pass's name in `opt-19 -passes=` (e.g. "instcombine",
  /// "licm"), or "seq-..." for a sub-sequence, or "default<Oz>".
  std::string_view Name;
  /// The module-level textual pipeline it runs, as
  /// llvm::PassBuilder::parsePassPipeline reads it (function, loop and
  /// cgscc passes inside their adaptors, e.g. "function(loop-mssa(licm))").
  std::string_view Pipeline;
};

/// The action table, indexed by action number (the number a policy
/// chooses); new actions are only ever appended. 66 actions: 56 single
/// passes (the transformations of `default<Oz>` and a few more), 9
/// POSET-RL-style sub-sequences of the `default<Oz>` pipeline, and
/// `default<Oz>` itself (the last). instcombine always runs as
/// `instcombine<no-verify-fixpoint>` (LLVM 19 ends the process when a
/// textual `instcombine` misses its fixpoint).
const std::vector<Action> &actions();

/// The index of the `default<Oz>` action.
size_t defaultOzAction();

/// The index of the action called \p Name, or an InvalidArgument error.
Expected<size_t> findAction(std::string_view Name);

/// Parses every action's pipeline with a PassBuilder without a target; an
/// error names the first action that does not parse.
Error checkActions();

/// Parses the textual module pipeline \p Text (Session::applyPipeline's
/// syntax) with a PassBuilder without a target: InvalidArgument naming the
/// element that does not parse.
Error checkPipeline(std::string_view Text);

/// Number of snapshot slots (SNAPSHOT/RESTORE arguments 0..7).
inline constexpr size_t NumSnapshotSlots = 8;

/// Default cap on the size of an input module file (256 MiB).
inline constexpr uint64_t DefaultMaxInputBytes = uint64_t(256) << 20;

/// Where a failed step leaves the module.
enum class Rollback {
  /// Back to the state before the step (the default). The session does
  /// not copy the module before every step: it keeps the pipelines applied
  /// since the newest copy it holds (the module as loaded, a snapshot, a
  /// restored slot or a checkpoint) and, when a step fails, replays them on
  /// a fresh copy of it. A checkpoint copy is taken once replaying would
  /// cost more than SessionOptions::MaxReplayMillis.
  Previous,
  /// Back to the module as loaded, steps = 0 (no copy per step: faster).
  Pristine,
};

/// How a session behaves.
struct SessionOptions {
  /// Largest module file (or byte string) load accepts.
  uint64_t MaxInputBytes = DefaultMaxInputBytes;
  /// Where a failed step leaves the module.
  Rollback OnFailure = Rollback::Previous;
  /// With Rollback::Previous: the most pass time (milliseconds, as the steps
  /// took it) a rollback may replay; past it the session copies the current
  /// module as a checkpoint. 0 copies after every step.
  unsigned MaxReplayMillis = 200;
  /// Optimise with the TargetMachine of the module's triple when LLVM has
  /// that target; otherwise with LLVM's target-independent defaults.
  bool UseTarget = true;
  /// Compute the `default<Oz>` baseline when a module loads (an input of
  /// the observation, `baseline_instcount`); without it that input is 0, and
  /// a load costs no pipeline (a constant pipeline's deployment).
  bool ComputeBaseline = true;
};

/// A module between steps, with its pristine copy, snapshots and baseline.
class Session {
public:
  /// Creates a session without a module; fails when an action of the table
  /// does not parse (checkActions()).
  static Expected<std::unique_ptr<Session>> create(SessionOptions Options = {});
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Loads the module in file \p Path (bitcode or textual IR): checks its
  /// size before reading it, parses, verifies, computes the `default<Oz>`
  /// baseline on a copy. Replaces the current module, drops the snapshots
  /// and sets steps to 0. On error (naming \p Path) nothing changes.
  Error loadFile(const std::string &Path);
  /// Like loadFile, from bytes in memory; \p Name names the module in
  /// errors and becomes its identifier.
  Error loadBytes(std::string_view Bytes, const std::string &Name);

  /// Takes \p M, made in \p Context (which nothing else uses), as the
  /// module, as loadBytes does with a parsed one: verified, the baseline
  /// computed on a copy parsed from its bitcode. The steps run on \p M
  /// itself, so what a compiler that made it would see of it (its use-list
  /// order, the names it has handed out) is kept: with default<Oz>, code
  /// generation of release()'s module is that compiler's -Oz, byte for byte.
  /// On error nothing changes and \p M is dropped.
  Error adopt(std::unique_ptr<llvm::LLVMContext> Context,
              std::unique_ptr<llvm::Module> M, const std::string &Name);
  /// Gives up the current module with its context (the copies and snapshots
  /// are dropped; the session then has no module): nulls without a module.
  std::pair<std::unique_ptr<llvm::LLVMContext>, std::unique_ptr<llvm::Module>>
  release();
  /// Whether a module is loaded.
  bool hasModule() const;
  /// The loaded module's name (the path given to loadFile), or "".
  const std::string &moduleName() const;

  /// Applies action \p Index to the current module; steps + 1 on success.
  /// InvalidArgument (nothing changes) for an index outside actions() or
  /// without a module; Broken when the action broke the module (see the file
  /// comment for where it is left).
  Error apply(int64_t Index);
  /// Runs the textual module pipeline \p Pipeline (anything
  /// llvm::PassBuilder::parsePassPipeline reads, e.g. a sequence outside
  /// the table) like an action: verified, steps + 1, rolled back and Broken
  /// when it breaks the module. InvalidArgument when it does not parse.
  Error applyPipeline(std::string_view Pipeline);
  /// Back to the module as loaded (steps = 0); snapshots are kept.
  Error reset();
  /// Copies the current module and step count into slot \p Slot (0..7),
  /// replacing what the slot held.
  Error snapshot(int64_t Slot);
  /// Makes a copy of slot \p Slot the current module (and its step count);
  /// the slot keeps its copy. InvalidArgument for an empty or unknown slot.
  Error restore(int64_t Slot);

  /// The current module as bitcode.
  Expected<std::string> bitcode() const;
  /// Writes the current module as bitcode to \p Path (IO errors name it).
  Error writeBitcode(const std::string &Path) const;
  /// The current module as textual IR (empty without a module).
  std::string printIR() const;
  /// The current module, or null.
  const llvm::Module *module() const;

  /// Instructions in the current module (0 without a module).
  int64_t instructionCount() const;
  /// Instructions in the module as loaded.
  int64_t initialInstructionCount() const;
  /// Instructions after `default<Oz>` on the module as loaded.
  int64_t baselineInstructionCount() const;
  /// Actions applied since the load or the last reset (or as restored).
  int64_t steps() const;
  /// Autophase features of the current module (zeros without a module).
  const autophase::FeatureVector &features() const;

private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> P;
};

} // namespace mlbridge::phase

#endif // MLBRIDGE_LLVM_PHASEORDERING_H

//===- llvm/PhasePipelines.h - Pipelines as clang builds them ---*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: the textual pipelines of the phase service's actions and of
/// `--pipeline`. Everything is opt's `-passes=` syntax except the
/// `default<L>` elements, which are the pipeline clang `-L` builds, with
/// clang's tuning, and may carry the inline threshold clang's `-mllvm
/// -inline-threshold=N` sets: `default<Oz;inline-threshold=N>`; and the
/// `optsize` element, which takes `minsize` off every function (keeping
/// `optsize`): `optsize,default<Os>` on the module of clang `-Oz`'s front end
/// is clang `-Os`'s code.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_PHASEPIPELINES_H
#define MLBRIDGE_SRC_LLVM_PHASEPIPELINES_H

#include "mlbridge/Error.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/PassManager.h"

namespace llvm {
class PassInstrumentationCallbacks;
class TargetMachine;
} // namespace llvm

namespace mlbridge::phase {

/// Smallest and largest inline threshold a `default<L;inline-threshold=N>`
/// element takes.
constexpr int MinInlineThreshold = -10000, MaxInlineThreshold = 10000;

/// The element that makes a module of clang -Oz's front end one of -Os's.
constexpr llvm::StringLiteral OptSizeElement = "optsize";

/// Fills \p MPM with the pipeline \p Text for \p TM (null: target-
/// independent) and \p PIC (null: none). InvalidArgument naming the
/// element when an element does not parse.
Error buildPipeline(llvm::StringRef Text, llvm::TargetMachine *TM,
                    llvm::PassInstrumentationCallbacks *PIC,
                    llvm::ModulePassManager &MPM);

} // namespace mlbridge::phase

#endif // MLBRIDGE_SRC_LLVM_PHASEPIPELINES_H

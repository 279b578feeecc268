//===- llvm/compat/PassPipelines.h - pass names by LLVM major -*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Textual pass names of the phase-ordering action table (PhaseActions.cpp)
/// whose parameters differ between supported LLVM majors
/// (docs/llvm-versions.md). String-literal macros, so that the table stays
/// a table of literals.
///
/// What differs:
/// - instcombine: since LLVM 18 a textual `instcombine` verifies that one
///   iteration reached a fixpoint and stops the process when it did not;
///   `instcombine<no-verify-fixpoint>` (as default<Oz> runs it) does not.
///   LLVM 16 neither verifies nor has the parameter.
/// - loop-rotate: default<Oz> rotates loops without duplicating headers,
///   which a textual pipeline says as `loop-rotate<no-header-duplication>`
///   since LLVM 17. LLVM 16 has no such parameter: its textual loop-rotate
///   duplicates headers, so on 16 the two sub-sequences using it differ
///   from default<Oz> there.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_COMPAT_PASSPIPELINES_H
#define MLBRIDGE_SRC_LLVM_COMPAT_PASSPIPELINES_H

#include "llvm/Config/llvm-config.h"

#if LLVM_VERSION_MAJOR >= 18
#define MLBRIDGE_PASS_INSTCOMBINE "instcombine<no-verify-fixpoint>"
#else
#define MLBRIDGE_PASS_INSTCOMBINE "instcombine"
#endif

#if LLVM_VERSION_MAJOR >= 17
#define MLBRIDGE_PASS_LOOP_ROTATE_OZ "loop-rotate<no-header-duplication>"
#else
#define MLBRIDGE_PASS_LOOP_ROTATE_OZ "loop-rotate"
#endif

#endif // MLBRIDGE_SRC_LLVM_COMPAT_PASSPIPELINES_H

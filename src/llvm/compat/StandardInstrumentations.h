//===- llvm/compat/StandardInstrumentations.h - by LLVM major -*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Registering LLVM's standard pass instrumentations, alike on every
/// supported LLVM major (docs/llvm-versions.md).
///
/// What differs: since LLVM 17 StandardInstrumentations::registerCallbacks
/// takes the module analysis manager; LLVM 16's takes the function one.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_COMPAT_STANDARDINSTRUMENTATIONS_H
#define MLBRIDGE_SRC_LLVM_COMPAT_STANDARDINSTRUMENTATIONS_H

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/StandardInstrumentations.h"

namespace mlbridge {
namespace compat {

/// SI.registerCallbacks(PIC, ...) with the analysis manager this LLVM wants.
inline void registerCallbacks(llvm::StandardInstrumentations &SI,
                              llvm::PassInstrumentationCallbacks &PIC,
                              llvm::ModuleAnalysisManager &MAM,
                              llvm::FunctionAnalysisManager &FAM) {
#if LLVM_VERSION_MAJOR >= 17
  (void)FAM;
  SI.registerCallbacks(PIC, &MAM);
#else
  (void)MAM;
  SI.registerCallbacks(PIC, &FAM);
#endif
}

} // namespace compat
} // namespace mlbridge

#endif // MLBRIDGE_SRC_LLVM_COMPAT_STANDARDINSTRUMENTATIONS_H

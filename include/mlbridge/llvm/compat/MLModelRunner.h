//===- mlbridge/llvm/compat/MLModelRunner.h - runner base by major -*- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The base class of mlbridge's llvm::MLModelRunner implementations, the
/// same on every supported LLVM major (docs/llvm-versions.md).
///
/// What differs: LLVM 17 added the virtual MLModelRunner::switchContext (the
/// function being compiled, for runners that log or serve it). On LLVM 16
/// the base declares it, so an adapter overrides it on both; no LLVM 16 code
/// calls it. LLVM 17 also added the runner kind Interactive.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_LLVM_COMPAT_MLMODELRUNNER_H
#define MLBRIDGE_LLVM_COMPAT_MLMODELRUNNER_H

#include "llvm/Analysis/MLModelRunner.h"
#include "llvm/Config/llvm-config.h"

namespace mlbridge {
namespace compat {

#if LLVM_VERSION_MAJOR >= 17
/// LLVM's MLModelRunner, which has switchContext.
using MLModelRunner = llvm::MLModelRunner;
/// Every runner kind this LLVM defines.
inline constexpr llvm::MLModelRunner::Kind LLVMRunnerKinds[] = {
    llvm::MLModelRunner::Kind::Unknown, llvm::MLModelRunner::Kind::Release,
    llvm::MLModelRunner::Kind::Development, llvm::MLModelRunner::Kind::NoOp,
    llvm::MLModelRunner::Kind::Interactive};
#else
/// Every runner kind this LLVM defines.
inline constexpr llvm::MLModelRunner::Kind LLVMRunnerKinds[] = {
    llvm::MLModelRunner::Kind::Unknown, llvm::MLModelRunner::Kind::Release,
    llvm::MLModelRunner::Kind::Development, llvm::MLModelRunner::Kind::NoOp};
/// LLVM 16's MLModelRunner with the switchContext of LLVM 17.
class MLModelRunner : public llvm::MLModelRunner {
public:
  using llvm::MLModelRunner::MLModelRunner;
  /// Tells the runner which function (or module) is being compiled.
  virtual void switchContext(llvm::StringRef) {}
};
#endif

} // namespace compat
} // namespace mlbridge

#endif // MLBRIDGE_LLVM_COMPAT_MLMODELRUNNER_H

//===- llvm/compat/MLInlineAdvisor.h - MLInlineAdvisor by major -*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// LLVM's MLInlineAdvisor with one constructor on every supported LLVM major
/// (docs/llvm-versions.md).
///
/// What differs: since LLVM 17 the constructor takes the function giving the
/// default advisor's decision for a call site (LLVM's interactive mode sends
/// it as "inlining_default"); LLVM 16's takes none. The plugin computes that
/// decision itself on both, so on LLVM 16 the function is not passed.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_LLVM_COMPAT_MLINLINEADVISOR_H
#define MLBRIDGE_SRC_LLVM_COMPAT_MLINLINEADVISOR_H

#include "llvm/Analysis/MLInlineAdvisor.h"
#include "llvm/Config/llvm-config.h"

#include <functional>
#include <memory>

namespace mlbridge {
namespace compat {

/// llvm::MLInlineAdvisor, constructed alike on LLVM 16 and 17+.
class MLInlineAdvisor : public llvm::MLInlineAdvisor {
public:
  MLInlineAdvisor(llvm::Module &M, llvm::ModuleAnalysisManager &MAM,
                  std::unique_ptr<llvm::MLModelRunner> Runner,
                  std::function<bool(llvm::CallBase &)> GetDefaultAdvice)
#if LLVM_VERSION_MAJOR >= 17
      : llvm::MLInlineAdvisor(M, MAM, std::move(Runner),
                              std::move(GetDefaultAdvice)){}
#else
      : llvm::MLInlineAdvisor(M, MAM, std::move(Runner)) {
    (void)GetDefaultAdvice;
  }
#endif
};

} // namespace compat
} // namespace mlbridge

#endif // MLBRIDGE_SRC_LLVM_COMPAT_MLINLINEADVISOR_H

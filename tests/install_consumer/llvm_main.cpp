// Uses the installed LLVM component, built for the LLVM major the consumer
// found: an echo runner behind LLVM's own MLModelRunner interface
// (MLModelRunnerAdapter), evaluated the way LLVM's advisors do.
#include "mlbridge/RunnerConfig.h"
#include "mlbridge/llvm/MLModelRunnerAdapter.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"

#include <cstdio>

int main() {
  using namespace mlbridge;
  auto Echo = createRunner(*RunnerConfig::parse("echo:x"),
                           {TensorSpec::of<int64_t>("x")},
                           {TensorSpec::of<int64_t>("decision")});
  if (!Echo)
    return 1;
  llvm::LLVMContext Ctx;
  auto Adapter = MLModelRunnerAdapter::create(
      Ctx, std::move(*Echo), {llvm::TensorSpec::createSpec<int64_t>("x", {1})});
  if (!Adapter)
    return 2;
  llvm::MLModelRunner &LLVMSide = **Adapter;
  *LLVMSide.getTensor<int64_t>(0) = 7;
  (*Adapter)->switchContext("f");
  if (LLVMSide.evaluate<int64_t>() != 7)
    return 3;
  std::printf("llvm ok %d\n", LLVM_VERSION_MAJOR);
  return 0;
}

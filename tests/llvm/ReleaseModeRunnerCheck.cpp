//===- ReleaseModeRunnerCheck.cpp - AOT model inside LLVM's own runner ----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// A model compiled by mlbridge-aot, used unchanged as the TGen of LLVM 19's
// llvm::ReleaseModeModelRunner<TGen> (the runner LLVM's MLGO advisors use for
// embedded models), built against Debian's llvm-19-dev: LLVM looks the
// features up as feed_<name> and the decision as fetch_<name>. Its results
// must equal mlbridge's AotModelRunner over the same class. Exit code 0 on
// success.
//
//===----------------------------------------------------------------------===//

#include "TorchMlp.h"
#include "mlbridge/AotModelRunner.h"

#include "llvm/Analysis/ReleaseModeModelRunner.h"
#include "llvm/Analysis/TensorSpec.h"
#include "llvm/IR/LLVMContext.h"

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  llvm::LLVMContext Ctx;
  std::vector<llvm::TensorSpec> Features = {
      llvm::TensorSpec::createSpec<float>("x", {1, 64})};
  llvm::ReleaseModeModelRunner<aot_test::TorchMlp> Llvm(Ctx, Features, "y");
  auto Ours = mlbridge::AotModelRunner<aot_test::TorchMlp>::create();
  if (!Ours) {
    std::fprintf(stderr, "%s\n", Ours.error().toString().c_str());
    return 1;
  }
  for (int Case = 0; Case < 100; ++Case) {
    float *A = Llvm.getTensor<float>(0);
    float *B = (*Ours)->input<float>(0);
    for (int I = 0; I < 64; ++I)
      A[I] = B[I] = std::sin(float(Case * 64 + I));
    float FromLlvm = Llvm.evaluate<float>();
    auto FromOurs = (*Ours)->evaluate<float>();
    if (!FromOurs || *FromOurs != FromLlvm) {
      std::fprintf(stderr, "case %d: ReleaseModeModelRunner %g, mlbridge %g\n",
                   Case, double(FromLlvm), FromOurs ? double(*FromOurs) : -1.0);
      return 1;
    }
  }
  std::printf("ReleaseModeModelRunner<TorchMlp>: 100 cases agree\n");
  return 0;
}

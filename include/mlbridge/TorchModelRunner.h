//===- mlbridge/TorchModelRunner.h - In-process LibTorch --------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// TorchModelRunner: a TorchScript model (torch.jit.script or trace, then
/// save) runs inside the compiler through LibTorch, with the same runner API
/// as the others. At creation the arguments of the model's forward() are
/// bound by name to input specs (an argument no spec names, or one that is
/// not a Tensor, is an error naming it), and one trial run on zeroed inputs
/// checks what forward() returns against the output specs: one tensor (one
/// output spec), a tuple or list of tensors (the output specs in order), or
/// a dict from names to tensors (the output specs by name); each with the
/// spec's dtype and element count. Inputs are tensors over the runner's own
/// buffers (no copy); evaluate() runs forward() in inference mode on a
/// reused argument stack and copies each result into its output buffer, so
/// it allocates nothing beyond what LibTorch allocates itself. Unsigned
/// 16/32/64-bit specs have no LibTorch dtype and are refused.
///
/// LibTorch's intra-op thread count is one per process: the runner sets it
/// (at::set_num_threads) when created.
///
/// Part of the optional `mlbridge_torch` library (MLBRIDGE_ENABLE_TORCH);
/// this header does not include LibTorch's.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TORCHMODELRUNNER_H
#define MLBRIDGE_TORCHMODELRUNNER_H

#include "mlbridge/ModelRunner.h"

#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

class RunnerFactories;

/// Configuration of a TorchModelRunner.
struct TorchOptions {
  /// LibTorch's intra-op threads, for the whole process (compilers run many
  /// processes: 1).
  int IntraOpThreads = 1;
};

/// A ModelRunner evaluating a TorchScript model in-process.
class TorchModelRunner final : public ModelRunner {
public:
  /// Loads the TorchScript model at \p Path.
  static Expected<std::unique_ptr<TorchModelRunner>>
  createFromFile(const std::string &Path, std::vector<TensorSpec> Inputs,
                 std::vector<TensorSpec> Outputs, TorchOptions Options = {});

  ~TorchModelRunner() override;

  /// Whether forward() takes an argument called like input \p I.
  bool readsInput(size_t I) const override;

  /// Implementation state (LibTorch objects); opaque to users.
  struct Impl;

private:
  TorchModelRunner();
  Error evaluateImpl() override;

  std::unique_ptr<Impl> P;
};

/// Adds the torch (TorchModelRunner) runner kind to \p Factories, for
/// createRunner() (mlbridge/RunnerConfig.h).
void addTorchRunners(RunnerFactories &Factories);

} // namespace mlbridge

#endif // MLBRIDGE_TORCHMODELRUNNER_H

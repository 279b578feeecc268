//===- mlbridge/OnnxModelRunner.h - In-process ONNX Runtime -----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// OnnxModelRunner: the trained model runs inside the compiler through ONNX
/// Runtime, with the same runner API as the pipe and gRPC runners (deployment
/// without IPC). Model inputs and outputs are bound to TensorSpecs by name,
/// checked once at creation (a missing input, another dtype, an incompatible
/// shape is an error naming it); runner inputs the model does not use still
/// get their buffers. Inputs and outputs are bound once to the runner's own
/// buffers, so evaluate() copies nothing. One ONNX Runtime environment per
/// process; one intra-op thread by default.
///
/// Part of the optional `mlbridge_onnx` library (MLBRIDGE_ENABLE_ONNXRUNTIME);
/// this header does not include ONNX Runtime headers.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_ONNXMODELRUNNER_H
#define MLBRIDGE_ONNXMODELRUNNER_H

#include "mlbridge/ModelRunner.h"

#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

class RunnerFactories;

/// Configuration of an OnnxModelRunner.
struct OnnxOptions {
  /// Threads inside one operator (compilers run many processes: 1).
  int IntraOpThreads = 1;
};

/// A ModelRunner evaluating an ONNX model in-process.
class OnnxModelRunner final : public ModelRunner {
public:
  /// Loads the model at \p Path.
  static Expected<std::unique_ptr<OnnxModelRunner>>
  createFromFile(const std::string &Path, std::vector<TensorSpec> Inputs,
                 std::vector<TensorSpec> Outputs, OnnxOptions Options = {});

  /// Loads a model from \p Size bytes at \p Data (e.g. embedded).
  static Expected<std::unique_ptr<OnnxModelRunner>>
  createFromBytes(const void *Data, size_t Size, std::vector<TensorSpec> Inputs,
                  std::vector<TensorSpec> Outputs, OnnxOptions Options = {});

  ~OnnxModelRunner() override;

  /// Whether the model has an input called like input \p I.
  bool readsInput(size_t I) const override;

  /// Implementation state (ONNX Runtime objects); opaque to users.
  struct Impl;

private:
  OnnxModelRunner();
  Error evaluateImpl() override;
  static Expected<std::unique_ptr<OnnxModelRunner>>
  create(const std::string *Path, const void *Data, size_t Size,
         std::vector<TensorSpec> Inputs, std::vector<TensorSpec> Outputs,
         OnnxOptions Options);

  std::unique_ptr<Impl> P;
};

/// Adds the onnx (OnnxModelRunner) runner kind to \p Factories, for
/// createRunner() (mlbridge/RunnerConfig.h).
void addOnnxRunners(RunnerFactories &Factories);

} // namespace mlbridge

#endif // MLBRIDGE_ONNXMODELRUNNER_H

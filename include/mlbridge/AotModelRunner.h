//===- mlbridge/AotModelRunner.h - Runner over an AOT model -----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The runner API over models compiled ahead of time by mlbridge-aot (CMake:
/// mlbridge_add_aot_model). Switching a pass from training (PipeModelRunner,
/// GrpcModelRunner) or ONNX Runtime to the compiled model changes only the
/// runner's constructor:
///
///   auto R = AotModelRunner<InlinerPolicy>::create(Features, {Advice});
///
/// or, for a model built as a loadable module (mlbridge_add_aot_model(...
/// SHARED)), chosen at run time:
///
///   auto R = AotInterfaceRunner::load("inliner_policy.so", Features,
///   {Advice});
///
/// Both run the model through its C interface (mlbridge/AotAbi.h). Model
/// inputs and outputs are bound to the runner's TensorSpecs by name at
/// creation (a missing input, another element type, another element count is
/// an error naming the tensor); runner inputs the model does not read still
/// get buffers. The tensors a model declares are checked before the model
/// object or any buffer is made: a valid shape (InvalidArgument), and its
/// inputs, and its outputs, each and together within the size budget of one
/// message (DefaultMaxMessageBytes, 64 MiB: TooLarge naming the tensor). The
/// model reads and writes the runner's own buffers, so evaluate() copies and
/// allocates nothing. A data-dependent failure of the model (an index out of
/// range) fails that evaluate() with ModelFailure. Core library; loading a
/// module uses dlopen.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_AOTMODELRUNNER_H
#define MLBRIDGE_AOTMODELRUNNER_H

#include "mlbridge/AotAbi.h"
#include "mlbridge/ModelRunner.h"

#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

/// A ModelRunner over the C interface of an AOT-compiled model.
class AotInterfaceRunner final : public ModelRunner {
public:
  /// Binds \p Model to \p Inputs and \p Outputs by name.
  static Expected<std::unique_ptr<AotInterfaceRunner>>
  create(const mlbridge_aot_model_v1 *Model, std::vector<TensorSpec> Inputs,
         std::vector<TensorSpec> Outputs);
  /// Binds \p Model to TensorSpecs made from its own inputs and outputs.
  static Expected<std::unique_ptr<AotInterfaceRunner>>
  create(const mlbridge_aot_model_v1 *Model);

  /// Loads the model exported by the loadable module at \p Path (its
  /// mlbridge_aot_model_v1_entry symbol) and binds it like create(). \p Path
  /// is a file: a name without '/' is in the current directory (the library
  /// path is never searched). metadata() answers what the module's optional
  /// mlbridge_aot_model_v1_metadata symbol says (mlbridge/AotAbi.h).
  static Expected<std::unique_ptr<AotInterfaceRunner>>
  load(const std::string &Path, std::vector<TensorSpec> Inputs,
       std::vector<TensorSpec> Outputs);
  /// Loads a module and binds the model to its own inputs and outputs.
  static Expected<std::unique_ptr<AotInterfaceRunner>>
  load(const std::string &Path);

  /// The TensorSpecs of \p Model's inputs (\p Outputs false) or outputs,
  /// checked as create() checks them (shapes, the size budget).
  static Expected<std::vector<TensorSpec>>
  modelSpecs(const mlbridge_aot_model_v1 *Model, bool Outputs);

  ~AotInterfaceRunner() override;

  /// The model's name (its C++ class name).
  const char *modelName() const { return Model->name; }
  /// Whether the model has an argument called like input \p I.
  bool readsInput(size_t I) const override;

  /// Implementation state (the loaded module, if any); opaque to users.
  struct Module;

private:
  /// Where the model's inputs and outputs are bound (see match()).
  struct Binding;
  AotInterfaceRunner(const mlbridge_aot_model_v1 *Model, void *Object);
  /// Binds the model's inputs \p Args and outputs \p Results to the
  /// runner's \p Inputs and \p Outputs by name, or an error naming the
  /// tensor; allocates no buffer.
  static Expected<Binding> match(const std::vector<TensorSpec> &Args,
                                 const std::vector<TensorSpec> &Results,
                                 const std::vector<TensorSpec> &Inputs,
                                 const std::vector<TensorSpec> &Outputs);
  /// Points the model object at the runner's buffers, as \p B says.
  void bind(const Binding &B);
  /// Keeps the loaded module \p Library open, and says its metadata.
  void adopt(std::unique_ptr<Module> Library);
  Error evaluateImpl() override;

  const mlbridge_aot_model_v1 *Model;
  void *Object;
  std::unique_ptr<Module> Library;
};

/// Runs the generated class \p Model (statically linked) through the runner
/// API: `AotModelRunner<InlinerPolicy>::create(Inputs, Outputs)`.
template <class Model> struct AotModelRunner {
  /// Binds the model to \p Inputs and \p Outputs by name.
  static Expected<std::unique_ptr<AotInterfaceRunner>>
  create(std::vector<TensorSpec> Inputs, std::vector<TensorSpec> Outputs) {
    return AotInterfaceRunner::create(Model::cInterface(), std::move(Inputs),
                                      std::move(Outputs));
  }
  /// Binds the model to its own inputs and outputs.
  static Expected<std::unique_ptr<AotInterfaceRunner>> create() {
    return AotInterfaceRunner::create(Model::cInterface());
  }
};

} // namespace mlbridge

#endif // MLBRIDGE_AOTMODELRUNNER_H

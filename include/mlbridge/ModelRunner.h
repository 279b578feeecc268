//===- mlbridge/ModelRunner.h - The runner API ------------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// ModelRunner: the compiler-side API shared by every runner (pipes, gRPC,
/// ONNX Runtime, AOT). It honours LLVM's MLModelRunner contract:
///  - the runner owns one contiguous buffer per input spec, reachable by
///    index (`input<T>(I)`) and by name (`input<T>("name")`);
///  - callers fill buffers (some only once) and call evaluate(); evaluate()
///    never resets the inputs;
///  - a feature the model does not know still gets a buffer.
/// Results are typed and checked: `evaluate<T>()` and `output<T>(...)` fail
/// with ErrorCode::TypeMismatch instead of reinterpreting bytes.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_MODELRUNNER_H
#define MLBRIDGE_MODELRUNNER_H

#include "mlbridge/Error.h"
#include "mlbridge/TensorBuffers.h"
#include "mlbridge/TensorSpec.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlbridge {

/// A read-only view of a contiguous typed tensor.
template <typename T> struct TensorView {
  /// First element.
  const T *Data = nullptr;
  /// Number of elements.
  size_t Size = 0;
  /// Element \p I.
  const T &operator[](size_t I) const { return Data[I]; }
  /// Iteration support.
  const T *begin() const { return Data; }
  /// Iteration support.
  const T *end() const { return Data + Size; }
};

/// What a model says about itself: (key, value) pairs, the keys starting
/// with "mlbridge." (ONNX metadata_props, which mlbridge-aot carries into
/// its modules).
using ModelMetadata = std::vector<std::pair<std::string, std::string>>;

/// The prefix of the metadata keys runners read: a model's other metadata
/// (its producer's notes) is not kept.
inline constexpr std::string_view ModelMetadataPrefix = "mlbridge.";

/// Base class of all runners. Not thread-safe: one runner per thread.
class ModelRunner {
public:
  virtual ~ModelRunner();
  ModelRunner(const ModelRunner &) = delete;
  ModelRunner &operator=(const ModelRunner &) = delete;

  /// Number of input tensors.
  size_t numInputs() const { return Inputs.size(); }
  /// Spec of input \p I.
  const TensorSpec &inputSpec(size_t I) const { return Inputs.spec(I); }
  /// Untyped buffer of input \p I (inputSpec(I).byteSize() bytes).
  void *inputData(size_t I) { return Inputs.data(I); }
  /// Index of the input called \p Name, or an InvalidArgument error.
  Expected<size_t> inputIndex(std::string_view Name) const;
  /// Whether evaluate() reads input \p I. A compiler may skip computing a
  /// feature that no evaluation reads (a model that does not declare it,
  /// a runner without a model); runners that send every input to a model
  /// elsewhere (pipes, gRPC) read them all, the default.
  virtual bool readsInput(size_t I) const { return I < Inputs.size(); }

  /// Typed buffer of input \p I; nullptr if \p I is out of range or T is not
  /// the input's element type (LLVM's getTensor<T>, but checked).
  template <typename T> T *input(size_t I) {
    if (I >= Inputs.size() || !Inputs.spec(I).isElementType<T>())
      return nullptr;
    return static_cast<T *>(Inputs.data(I));
  }
  /// Typed buffer of the input called \p Name, checked.
  template <typename T> Expected<T *> input(std::string_view Name) {
    auto I = inputIndex(Name);
    if (!I)
      return I.takeError();
    if (!Inputs.spec(*I).isElementType<T>())
      return typeMismatch(Inputs.spec(*I), DTypeOf<T>::value, "input");
    return static_cast<T *>(Inputs.data(*I));
  }

  /// Runs the model on the current inputs. On success the outputs hold the
  /// result; on failure the caller should use its default heuristic.
  Error evaluate();

  /// Runs the model and returns output 0 as a scalar of type T; fails with
  /// TypeMismatch unless output 0 has element type T and one element.
  template <typename T> Expected<T> evaluate() {
    if (Error E = evaluate())
      return E;
    if (Outputs.size() == 0)
      return makeError(ErrorCode::TypeMismatch, "model has no outputs");
    const TensorSpec &S = Outputs.spec(0);
    if (!S.isElementType<T>())
      return typeMismatch(S, DTypeOf<T>::value, "output");
    if (S.elementCount() != 1)
      return makeError(ErrorCode::TypeMismatch, "output '", S.name(), "' has ",
                       std::to_string(S.elementCount()),
                       " elements, not a scalar");
    return *static_cast<const T *>(Outputs.data(0));
  }

  /// Number of outputs.
  size_t numOutputs() const { return Outputs.size(); }
  /// Spec of output \p I.
  const TensorSpec &outputSpec(size_t I) const { return Outputs.spec(I); }
  /// Untyped result of output \p I from the last successful evaluate().
  const void *outputData(size_t I) const { return Outputs.data(I); }
  /// Index of the output called \p Name, or an InvalidArgument error.
  Expected<size_t> outputIndex(std::string_view Name) const;
  /// Output \p I as a typed view, checked.
  template <typename T> Expected<TensorView<T>> output(size_t I) const {
    if (I >= Outputs.size())
      return makeError(ErrorCode::InvalidArgument, "no output #",
                       std::to_string(I));
    const TensorSpec &S = Outputs.spec(I);
    if (!S.isElementType<T>())
      return typeMismatch(S, DTypeOf<T>::value, "output");
    return TensorView<T>{static_cast<const T *>(Outputs.data(I)),
                         S.elementCount()};
  }
  /// The output called \p Name as a typed view, checked.
  template <typename T>
  Expected<TensorView<T>> output(std::string_view Name) const {
    auto I = outputIndex(Name);
    if (!I)
      return I.takeError();
    return output<T>(*I);
  }

  /// Starts a new context (e.g. the function being compiled); observation
  /// numbers restart at 0. Runners that log or forward contexts override it.
  virtual Error switchContext(std::string_view Name);

  /// The error that made this runner unusable, or success.
  const Error &brokenBy() const { return Broken; }

  /// The value of the model's metadata entry \p Key, or nullopt (no such
  /// entry, or a runner whose model says nothing: pipes, gRPC, baselines).
  /// A model is untrusted: a value is a claim the caller may act on only
  /// where acting on a false one costs nothing but quality (e.g. skipping
  /// the model where it says it answers the compiler's own decision).
  std::optional<std::string_view> metadata(std::string_view Key) const;
  /// All of the model's metadata entries, in the model's order.
  const ModelMetadata &metadataEntries() const { return Metadata; }

protected:
  /// Creates the input and output buffers. Subclasses call this from their
  /// factory and forward any error.
  ModelRunner() = default;
  /// Sets up buffers for \p InputSpecs and \p OutputSpecs.
  Error initBuffers(std::vector<TensorSpec> InputSpecs,
                    std::vector<TensorSpec> OutputSpecs);

  /// Computes outputs from inputs. Called by evaluate() unless broken.
  virtual Error evaluateImpl() = 0;

  /// Marks the runner unusable: later calls fail fast with \p Why.
  void markBroken(const Error &Why);

  /// Sets what metadata() answers (runners over a model file call it).
  void setMetadata(ModelMetadata M) { Metadata = std::move(M); }

  /// Builds a TypeMismatch error for \p Spec accessed as \p Asked.
  static Error typeMismatch(const TensorSpec &Spec, DType Asked,
                            const char *Role);

  /// The inputs, filled by the caller.
  TensorBuffers Inputs;
  /// The outputs, filled by evaluateImpl().
  TensorBuffers Outputs;

private:
  Error Broken;
  ModelMetadata Metadata;
};

} // namespace mlbridge

#endif // MLBRIDGE_MODELRUNNER_H

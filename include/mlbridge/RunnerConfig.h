//===- mlbridge/RunnerConfig.h - Choosing a runner ----------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// One way to say which runner a compiler should use, shared by the LLVM
/// plugin, the C API and the Python tooling: a RunnerConfig, with a string
/// form for command-line flags and environment variables, and createRunner().
///
/// The string form is `KIND[:ARGUMENT][,KEY=VALUE]...`:
///
///   pipe:/tmp/run/inline,protocol=extended,format=json,timeout_ms=5000
///   pipe:/tmp/run/inline,connect_timeout_ms=60000,call_timeout_ms=1000
///   grpc:unix:/tmp/run/model.sock,mode=streaming
///   onnx:/models/inline.onnx,threads=1
///   onnx:/models/inline.onnx,load=eager
///   aot:/models/inline_policy.so
///   constant:1
///   echo:inlining_default
///
/// The argument runs from the first ':' to the first ','; it cannot contain
/// a ',' (build a RunnerConfig in code for such paths). The golden vectors
/// in tests/golden/runner_configs.json pin the grammar for C++ and Python.
///
/// Runners of optional components are created through factories the caller
/// adds: RunnerFactories::core() knows pipe, aot, constant and echo;
/// addGrpcRunners() (mlbridge/GrpcModelRunner.h) and addOnnxRunners()
/// (mlbridge/OnnxModelRunner.h) add the others.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_RUNNERCONFIG_H
#define MLBRIDGE_RUNNERCONFIG_H

#include "mlbridge/Codec.h"
#include "mlbridge/Error.h"
#include "mlbridge/ModelRunner.h"
#include "mlbridge/PipeModelRunner.h"
#include "mlbridge/TensorSpec.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// Every kind of runner a RunnerConfig can name.
enum class RunnerKind {
  /// A model in another process over FIFOs (PipeModelRunner).
  Pipe,
  /// A model served over gRPC (GrpcModelRunner).
  Grpc,
  /// An ONNX model in-process (OnnxModelRunner).
  Onnx,
  /// An AOT-compiled model in a loadable module (AotInterfaceRunner).
  Aot,
  /// No model: output 0 is always the same number.
  Constant,
  /// No model: output 0 is a copy of one input (e.g. the compiler's own
  /// decision, for a baseline that measures what the bridge costs).
  Echo,
  /// A TorchScript model in-process (TorchModelRunner).
  Torch,
};

/// The name of \p Kind in the string form, e.g. "pipe".
const char *runnerKindName(RunnerKind Kind);
/// The kind called \p Name, or an InvalidArgument error listing the kinds.
Expected<RunnerKind> parseRunnerKind(std::string_view Name);

/// Longest timeout a runner configuration accepts, in milliseconds (about 24
/// days): far beyond any sensible wait, and far from overflowing deadline
/// arithmetic.
inline constexpr int64_t MaxRunnerTimeoutMs = 2147483647; // INT32_MAX

/// Everything needed to create a runner. Fields a kind does not use are
/// ignored by it.
struct RunnerConfig {
  /// Which runner.
  RunnerKind Kind = RunnerKind::Pipe;
  /// The kind's argument: channel base (pipe), target (grpc), model file
  /// (onnx, aot), the number (constant), the input's name (echo). An empty
  /// pipe channel makes the runner create a private one.
  std::string Argument;
  /// Pipe: LLVM's protocol (key protocol=mlgo), mlbridge's framed one
  /// (extended) or tensors in shared memory (shm).
  PipeProtocol Protocol = PipeProtocol::Mlgo;
  /// Pipe (extended protocol): the serialisation.
  Format Serialization = Format::Bitstream;
  /// gRPC: one stream per session instead of one call per decision.
  bool Streaming = false;
  /// Remote runners: longest wait for the peer to open the channel or
  /// accept the session (key connect_timeout_ms; timeout_ms sets both).
  std::chrono::milliseconds ConnectTimeout{10000};
  /// Remote runners: deadline of each evaluation (key call_timeout_ms).
  std::chrono::milliseconds Timeout{10000};
  /// ONNX Runtime: threads inside one operator.
  int Threads = 1;
  /// ONNX Runtime (key load=lazy|eager): load ONNX Runtime and the model's
  /// session at the first evaluation (lazy, the default; the model's inputs
  /// and outputs are still checked against the specs at creation), or at
  /// creation (eager: every error ONNX Runtime can find is reported then).
  /// A compiler process that makes no decision then pays nothing for it.
  bool LazyLoad = true;
  /// Largest message a remote runner sends or accepts.
  size_t MaxMessageBytes = DefaultMaxMessageBytes;

  /// Parses the string form (see the file comment); errors name the part
  /// that is wrong and what is accepted.
  static Expected<RunnerConfig> parse(std::string_view Text);
  /// The string form, canonical: the argument, then only the keys whose
  /// values differ from the defaults, in a fixed order. parse(str()) gives
  /// back an equal configuration.
  std::string str() const;
  /// The value of a constant runner (parsed from Argument).
  Expected<int64_t> constant() const;
  /// Checks the fields parse() would refuse (a missing argument, a format
  /// without the extended protocol, ...), for configurations built in code.
  Error check() const;
};

/// Field-by-field equality.
bool operator==(const RunnerConfig &A, const RunnerConfig &B);
/// Field-by-field inequality.
inline bool operator!=(const RunnerConfig &A, const RunnerConfig &B) {
  return !(A == B);
}

/// Creates one kind of runner from a configuration and the specs.
using RunnerFactory = std::function<Expected<std::unique_ptr<ModelRunner>>(
    const RunnerConfig &, std::vector<TensorSpec>, std::vector<TensorSpec>)>;

/// The runner kinds a program can create, each with its factory.
class RunnerFactories {
public:
  /// The kinds of the core library: pipe, aot, constant, echo.
  static RunnerFactories core();
  /// Adds (or replaces) the factory of \p Kind.
  void add(RunnerKind Kind, RunnerFactory Factory);
  /// Whether \p Kind can be created.
  bool has(RunnerKind Kind) const;
  /// The factory of \p Kind, or null.
  const RunnerFactory *find(RunnerKind Kind) const;

private:
  /// One factory per kind, indexed by the enum's value.
  std::vector<RunnerFactory> Factories;
};

/// Creates the runner \p Config describes, with \p Inputs and \p Outputs.
/// A kind missing from \p Factories (a component this program was built
/// without) is an Unsupported error naming it.
Expected<std::unique_ptr<ModelRunner>>
createRunner(const RunnerConfig &Config, std::vector<TensorSpec> Inputs,
             std::vector<TensorSpec> Outputs,
             const RunnerFactories &Factories = RunnerFactories::core());

} // namespace mlbridge

#endif // MLBRIDGE_RUNNERCONFIG_H

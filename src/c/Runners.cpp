//===- c/Runners.cpp - C API: creating runners ----------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The mlbridge_*_runner_create functions and the option initialisers: each
// checks its arguments (pointers, struct_size, enum values, timeouts, specs),
// turns them into a RunnerConfig (mlbridge/RunnerConfig.h) and creates the
// runner with createRunner(), like the LLVM plugin. Components this build
// lacks (gRPC: MLBRIDGE_C_HAVE_GRPC, ONNX Runtime:
// MLBRIDGE_C_HAVE_ONNXRUNTIME) fail with MLBRIDGE_UNSUPPORTED, after the
// same argument checks. LibTorch's runner kind comes from a module in the
// mlbridge/ directory beside this library, opened when first asked for
// (modules/RunnerModules.h).
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include "mlbridge/AotModelRunner.h"
#include "mlbridge/PipeModelRunner.h"
#include "mlbridge/RunnerConfig.h"
#ifdef MLBRIDGE_C_HAVE_GRPC
#include "mlbridge/GrpcModelRunner.h"
#endif
#ifdef MLBRIDGE_C_HAVE_ONNXRUNTIME
#include "mlbridge/OnnxModelRunner.h"
#endif

#include "modules/RunnerModules.h"

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

using namespace mlbridge;
using namespace mlbridge::capi;

namespace {

/// What the bodies of the creation functions return.
using HandleOrError = Expected<std::unique_ptr<mlbridge_runner>>;

/// Size of version 1 of mlbridge_pipe_options (up to io_timeout_ms), the
/// smallest struct_size accepted even if the struct grows.
constexpr size_t PipeOptionsV1Size =
    offsetof(mlbridge_pipe_options, io_timeout_ms) + sizeof(int64_t);
/// Size of version 1 of mlbridge_grpc_options (up to call_timeout_ms).
constexpr size_t GrpcOptionsV1Size =
    offsetof(mlbridge_grpc_options, call_timeout_ms) + sizeof(int64_t);

/// Defaults documented in mlbridge.h.
constexpr int64_t DefaultPipeTimeoutMs = 60000;
constexpr int64_t DefaultGrpcTimeoutMs = 10000;

/// Checks that an option struct is at least version 1's size.
Error checkStructSize(size_t Given, size_t V1Size, const char *Type,
                      const char *Init) {
  if (Given >= V1Size)
    return Error::success();
  return makeError(ErrorCode::InvalidArgument, "options->struct_size is ",
                   std::to_string(Given), ", smaller than ", Type,
                   " version 1 (", std::to_string(V1Size),
                   " bytes): initialise the options with ", Init, "()");
}

/// Converts the timeout option \p Name to a duration, checking its range.
Expected<std::chrono::milliseconds> toTimeout(int64_t Ms, const char *Name) {
  if (Ms < 0 || Ms > MaxRunnerTimeoutMs)
    return makeError(ErrorCode::InvalidArgument, "options->", Name, " is ",
                     std::to_string(Ms), ", not between 0 and ",
                     std::to_string(MaxRunnerTimeoutMs), " ms");
  return std::chrono::milliseconds(Ms);
}

/// The input and output specs of a new runner.
struct SpecPair {
  /// The inputs, in the caller's order.
  std::vector<TensorSpec> Inputs;
  /// The outputs, in the caller's order.
  std::vector<TensorSpec> Outputs;
};

/// Checks the pointers of a version 1 model interface handed in by the
/// caller (other versions are the runner's to refuse).
Error checkModelPointers(const mlbridge_aot_model_v1 &M) {
  if (M.abi_version != 1)
    return Error::success();
  /// One pointer field and whether it is missing.
  struct Field {
    /// True when the field is NULL (and must not be).
    bool Missing;
    /// The field, for the message.
    const char *Name;
  };
  const Field Fields[] = {
      {!M.name, "model->name"},
      {!M.create, "model->create"},
      {!M.destroy, "model->destroy"},
      {!M.arg_data, "model->arg_data"},
      {!M.result_data, "model->result_data"},
      {!M.set_arg_data, "model->set_arg_data"},
      {!M.set_result_data, "model->set_result_data"},
      {!M.run, "model->run"},
      {!M.args && M.num_args > 0, "model->args"},
      {!M.results && M.num_results > 0, "model->results"},
  };
  for (const Field &F : Fields)
    if (F.Missing)
      return nullArgument(F.Name);
  if (M.num_args < 0 || M.num_results < 0)
    return makeError(ErrorCode::InvalidArgument, "model '", M.name, "' has ",
                     std::to_string(M.num_args), " inputs and ",
                     std::to_string(M.num_results), " outputs");
  return Error::success();
}

/// Converts both spec arrays.
Expected<SpecPair> toSpecPair(const mlbridge_tensor_spec *Inputs,
                              size_t NumInputs,
                              const mlbridge_tensor_spec *Outputs,
                              size_t NumOutputs) {
  auto In = toSpecs(Inputs, NumInputs, "inputs");
  if (!In)
    return In.takeError();
  auto Out = toSpecs(Outputs, NumOutputs, "outputs");
  if (!Out)
    return Out.takeError();
  return SpecPair{std::move(*In), std::move(*Out)};
}

/// Wraps a freshly made C++ runner (or its error) into a C handle.
template <typename RunnerT>
HandleOrError wrap(Expected<std::unique_ptr<RunnerT>> R) {
  if (!R)
    return R.takeError();
  return makeHandle(std::move(*R));
}

/// The runner kinds of this build, with \p Kind's module loaded when it
/// has one (a copy: the process's set only grows, under a lock).
Expected<RunnerFactories> factoriesFor(RunnerKind Kind) {
  static std::mutex Lock;
  static RunnerFactories F = [] {
    RunnerFactories R = RunnerFactories::core();
#ifdef MLBRIDGE_C_HAVE_GRPC
    addGrpcRunners(R);
#endif
#ifdef MLBRIDGE_C_HAVE_ONNXRUNTIME
    addOnnxRunners(R);
#endif
    return R;
  }();
  std::lock_guard<std::mutex> Guard(Lock);
  if (Error E = addModuleRunners(Kind, ownDirectory() + "/mlbridge", F))
    return E;
  return F;
}

/// Creates the runner \p Config describes and wraps it in a C handle (a pipe
/// runner's handle also knows its channel).
HandleOrError fromConfig(const RunnerConfig &Config, SpecPair Specs) {
  auto Factories = factoriesFor(Config.Kind);
  if (!Factories)
    return Factories.takeError();
  auto R = mlbridge::createRunner(Config, std::move(Specs.Inputs),
                                  std::move(Specs.Outputs), *Factories);
  if (!R)
    return R.takeError();
  std::string Channel;
  if (Config.Kind == RunnerKind::Pipe)
    Channel = static_cast<PipeModelRunner &>(**R).channelBase();
  auto H = makeHandle(std::move(*R));
  if (Config.Kind == RunnerKind::Pipe) {
    H->Channel = std::move(Channel);
    H->IsPipe = true;
  }
  return H;
}

/// The AOT runner over \p Model or the module at \p Path (exactly one is
/// given); NULL spec arrays stand for the model's own inputs or outputs.
HandleOrError makeAot(const mlbridge_aot_model_v1 *Model, const char *Path,
                      const mlbridge_tensor_spec *Inputs, size_t NumInputs,
                      const mlbridge_tensor_spec *Outputs, size_t NumOutputs) {
  // A NULL array with a count is a mistake (toSpecs says so), not "the
  // model's own".
  auto In = toSpecs(Inputs, NumInputs, "inputs");
  if (!In)
    return In.takeError();
  auto Out = toSpecs(Outputs, NumOutputs, "outputs");
  if (!Out)
    return Out.takeError();
  if (Model) {
    if (!Inputs) {
      auto Own = AotInterfaceRunner::modelSpecs(Model, false);
      if (!Own)
        return Own.takeError();
      *In = std::move(*Own);
    }
    if (!Outputs) {
      auto Own = AotInterfaceRunner::modelSpecs(Model, true);
      if (!Own)
        return Own.takeError();
      *Out = std::move(*Own);
    }
    return wrap(
        AotInterfaceRunner::create(Model, std::move(*In), std::move(*Out)));
  }
  if (!Inputs && !Outputs)
    return wrap(AotInterfaceRunner::load(Path));
  if (!Inputs || !Outputs) {
    // The module's own specs are only known once it is loaded: bind it to
    // them first, then bind the caller's half with the other.
    auto Own = AotInterfaceRunner::load(Path);
    if (!Own)
      return Own.takeError();
    std::vector<TensorSpec> &Side = !Inputs ? *In : *Out;
    bool OwnOutputs = !Outputs;
    size_t N = OwnOutputs ? (*Own)->numOutputs() : (*Own)->numInputs();
    for (size_t I = 0; I < N; ++I)
      Side.push_back(OwnOutputs ? (*Own)->outputSpec(I) : (*Own)->inputSpec(I));
  }
  return wrap(AotInterfaceRunner::load(Path, std::move(*In), std::move(*Out)));
}

} // namespace

extern "C" {

void mlbridge_pipe_options_init(mlbridge_pipe_options *options) {
  if (!options)
    return;
  *options = mlbridge_pipe_options();
  options->struct_size = sizeof(mlbridge_pipe_options);
  options->channel_base = nullptr;
  options->protocol = MLBRIDGE_PIPE_MLGO;
  options->format = MLBRIDGE_FORMAT_BITSTREAM;
  options->open_timeout_ms = DefaultPipeTimeoutMs;
  options->io_timeout_ms = DefaultPipeTimeoutMs;
}

mlbridge_status mlbridge_pipe_runner_create(
    const mlbridge_tensor_spec *inputs, size_t num_inputs,
    const mlbridge_tensor_spec *outputs, size_t num_outputs,
    const mlbridge_pipe_options *options, mlbridge_runner **runner,
    mlbridge_error **error) {
  return createRunner(runner, error, [&]() -> HandleOrError {
    if (!options)
      return nullArgument("options");
    if (Error E = checkStructSize(options->struct_size, PipeOptionsV1Size,
                                  "mlbridge_pipe_options",
                                  "mlbridge_pipe_options_init"))
      return E;
    auto Specs = toSpecPair(inputs, num_inputs, outputs, num_outputs);
    if (!Specs)
      return Specs.takeError();
    RunnerConfig C;
    C.Kind = RunnerKind::Pipe;
    if (options->channel_base)
      C.Argument = options->channel_base;
    long long Protocol = rawEnum(options->protocol);
    if (Protocol == MLBRIDGE_PIPE_MLGO)
      C.Protocol = PipeProtocol::Mlgo;
    else if (Protocol == MLBRIDGE_PIPE_EXTENDED)
      C.Protocol = PipeProtocol::Extended;
    else if (Protocol == MLBRIDGE_PIPE_SHM)
      C.Protocol = PipeProtocol::SharedMemory;
    else
      return makeError(ErrorCode::InvalidArgument, "options->protocol is ",
                       std::to_string(Protocol),
                       ", not an mlbridge_pipe_protocol");
    switch (rawEnum(options->format)) {
    case MLBRIDGE_FORMAT_BITSTREAM:
      C.Serialization = Format::Bitstream;
      break;
    case MLBRIDGE_FORMAT_JSON:
      C.Serialization = Format::Json;
      break;
    case MLBRIDGE_FORMAT_PROTOBUF:
      C.Serialization = Format::Protobuf;
      break;
    default:
      return makeError(ErrorCode::InvalidArgument, "options->format is ",
                       std::to_string(rawEnum(options->format)),
                       ", not an mlbridge_format");
    }
    auto Open = toTimeout(options->open_timeout_ms, "open_timeout_ms");
    if (!Open)
      return Open.takeError();
    auto Io = toTimeout(options->io_timeout_ms, "io_timeout_ms");
    if (!Io)
      return Io.takeError();
    C.ConnectTimeout = *Open;
    C.Timeout = *Io;
    return fromConfig(C, std::move(*Specs));
  });
}

const char *mlbridge_pipe_runner_channel(const mlbridge_runner *runner) {
  return runner && runner->IsPipe ? runner->Channel.c_str() : nullptr;
}

void mlbridge_grpc_options_init(mlbridge_grpc_options *options) {
  if (!options)
    return;
  *options = mlbridge_grpc_options();
  options->struct_size = sizeof(mlbridge_grpc_options);
  options->target = nullptr;
  options->streaming = 0;
  options->connect_timeout_ms = DefaultGrpcTimeoutMs;
  options->call_timeout_ms = DefaultGrpcTimeoutMs;
}

mlbridge_status mlbridge_grpc_runner_create(
    const mlbridge_tensor_spec *inputs, size_t num_inputs,
    const mlbridge_tensor_spec *outputs, size_t num_outputs,
    const mlbridge_grpc_options *options, mlbridge_runner **runner,
    mlbridge_error **error) {
  return createRunner(runner, error, [&]() -> HandleOrError {
    if (!options)
      return nullArgument("options");
    if (Error E = checkStructSize(options->struct_size, GrpcOptionsV1Size,
                                  "mlbridge_grpc_options",
                                  "mlbridge_grpc_options_init"))
      return E;
    auto Specs = toSpecPair(inputs, num_inputs, outputs, num_outputs);
    if (!Specs)
      return Specs.takeError();
    if (!options->target)
      return nullArgument("options->target");
    if (options->streaming != 0 && options->streaming != 1)
      return makeError(ErrorCode::InvalidArgument, "options->streaming is ",
                       std::to_string(options->streaming), ", not 0 or 1");
    auto Connect = toTimeout(options->connect_timeout_ms, "connect_timeout_ms");
    if (!Connect)
      return Connect.takeError();
    auto Call = toTimeout(options->call_timeout_ms, "call_timeout_ms");
    if (!Call)
      return Call.takeError();
    RunnerConfig C;
    C.Kind = RunnerKind::Grpc;
    C.Argument = options->target;
    C.Streaming = options->streaming == 1;
    C.ConnectTimeout = *Connect;
    C.Timeout = *Call;
    return fromConfig(C, std::move(*Specs));
  });
}

mlbridge_status mlbridge_onnx_runner_create(
    const char *model_path, const mlbridge_tensor_spec *inputs,
    size_t num_inputs, const mlbridge_tensor_spec *outputs, size_t num_outputs,
    int intra_op_threads, mlbridge_runner **runner, mlbridge_error **error) {
  return createRunner(runner, error, [&]() -> HandleOrError {
    if (!model_path)
      return nullArgument("model_path");
    if (intra_op_threads < 0)
      return makeError(ErrorCode::InvalidArgument, "intra_op_threads is ",
                       std::to_string(intra_op_threads), ", not >= 0");
    auto Specs = toSpecPair(inputs, num_inputs, outputs, num_outputs);
    if (!Specs)
      return Specs.takeError();
    RunnerConfig C;
    C.Kind = RunnerKind::Onnx;
    C.Argument = model_path;
    C.Threads = intra_op_threads == 0 ? 1 : intra_op_threads;
    return fromConfig(C, std::move(*Specs));
  });
}

mlbridge_status mlbridge_aot_runner_create(
    const mlbridge_aot_model_v1 *model, const mlbridge_tensor_spec *inputs,
    size_t num_inputs, const mlbridge_tensor_spec *outputs, size_t num_outputs,
    mlbridge_runner **runner, mlbridge_error **error) {
  return createRunner(runner, error, [&]() -> HandleOrError {
    if (!model)
      return nullArgument("model");
    if (Error E = checkModelPointers(*model))
      return E;
    return makeAot(model, nullptr, inputs, num_inputs, outputs, num_outputs);
  });
}

mlbridge_status mlbridge_aot_runner_load(
    const char *module_path, const mlbridge_tensor_spec *inputs,
    size_t num_inputs, const mlbridge_tensor_spec *outputs, size_t num_outputs,
    mlbridge_runner **runner, mlbridge_error **error) {
  return createRunner(runner, error, [&]() -> HandleOrError {
    if (!module_path)
      return nullArgument("module_path");
    return makeAot(nullptr, module_path, inputs, num_inputs, outputs,
                   num_outputs);
  });
}

mlbridge_status
mlbridge_runner_create(const char *config, const mlbridge_tensor_spec *inputs,
                       size_t num_inputs, const mlbridge_tensor_spec *outputs,
                       size_t num_outputs, mlbridge_runner **runner,
                       mlbridge_error **error) {
  return createRunner(runner, error, [&]() -> HandleOrError {
    if (!config)
      return nullArgument("config");
    auto C = RunnerConfig::parse(config);
    if (!C)
      return C.takeError();
    if (C->Kind == RunnerKind::Aot)
      return makeAot(nullptr, C->Argument.c_str(), inputs, num_inputs, outputs,
                     num_outputs);
    auto Specs = toSpecPair(inputs, num_inputs, outputs, num_outputs);
    if (!Specs)
      return Specs.takeError();
    return fromConfig(*C, std::move(*Specs));
  });
}

} // extern "C"

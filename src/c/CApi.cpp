//===- c/CApi.cpp - C API: versions, errors, using runners ----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The entry points of include/mlbridge/mlbridge.h that do not create runners:
// versions and status names, creation errors, and everything done with a
// runner (specs, buffers, evaluation, context switches). Each one checks its
// pointer arguments and runs inside an exception barrier
// (capi::runnerCall); failures are kept as the runner's last error.
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include <string>

#ifndef MLBRIDGE_VERSION_STRING
#error "MLBRIDGE_VERSION_STRING must be defined by the build"
#endif

using namespace mlbridge;
using namespace mlbridge::capi;

namespace {

/// The static error handed out when a creation error cannot be allocated;
/// mlbridge_error_free() never frees it.
mlbridge_error OutOfMemoryError{
    MLBRIDGE_OUT_OF_MEMORY, "out of memory (no room for the message either)"};

/// Checks that \p Index names one of \p Specs (\p Role: "input"/"output").
Error checkIndex(const std::vector<mlbridge_runner::CSpec> &Specs, size_t Index,
                 const char *Role) {
  if (Index < Specs.size())
    return Error::success();
  return makeError(ErrorCode::InvalidArgument, "no ", Role, " #",
                   std::to_string(Index), " (the runner has ",
                   std::to_string(Specs.size()), " ", Role, "s)");
}

/// The index of the input (\p IsInput) or output of \p Runner called
/// \p Name.
Expected<size_t> findByName(const ModelRunner &Runner, const char *Name,
                            bool IsInput) {
  if (!Name)
    return nullArgument("name");
  return IsInput ? Runner.inputIndex(Name) : Runner.outputIndex(Name);
}

/// Checks that spec \p S is accessed as its own element type: \p Asked, an
/// mlbridge_dtype value from the caller (rawEnum).
Error checkDType(const mlbridge_runner::CSpec &S, long long Asked,
                 const char *Role) {
  auto Type = toDType(Asked, "dtype");
  if (!Type)
    return Type.takeError();
  if (*Type != static_cast<DType>(S.DType))
    return makeError(ErrorCode::TypeMismatch, Role, " '", S.Name, "' is ",
                     dtypeName(static_cast<DType>(S.DType)), ", not ",
                     dtypeName(*Type));
  return Error::success();
}

/// Fills \p Out with a view of \p S (pointers into the runner).
void describe(const mlbridge_runner::CSpec &S, mlbridge_tensor_spec *Out) {
  Out->name = S.Name.c_str();
  Out->dtype = S.DType;
  Out->rank = S.Shape.size();
  Out->shape = S.Shape.empty() ? nullptr : S.Shape.data();
}

/// The shared body of mlbridge_runner_input and _input_by_name.
Error inputBuffer(mlbridge_runner &H, size_t Index, long long DTypeAsked,
                  void **Data, size_t *Count) {
  if (Error E = checkIndex(H.Inputs, Index, "input"))
    return E;
  if (Error E = checkDType(H.Inputs[Index], DTypeAsked, "input"))
    return E;
  *Data = H.Runner->inputData(Index);
  if (Count)
    *Count = H.Inputs[Index].Count;
  return Error::success();
}

/// The shared body of mlbridge_runner_output and _output_by_name.
Error outputBuffer(mlbridge_runner &H, size_t Index, long long DTypeAsked,
                   const void **Data, size_t *Count) {
  if (Error E = checkIndex(H.Outputs, Index, "output"))
    return E;
  if (Error E = checkDType(H.Outputs[Index], DTypeAsked, "output"))
    return E;
  *Data = H.Runner->outputData(Index);
  if (Count)
    *Count = H.Outputs[Index].Count;
  return Error::success();
}

/// The error of a runner an unexpected exception left unusable.
Error brokenByException() {
  return makeError(ErrorCode::Broken, "runner unusable after an internal "
                                      "error in an earlier call");
}

/// Clears the out-parameters of a buffer query before it runs.
template <typename DataT> void clearOut(DataT **Data, size_t *Count) {
  if (Data)
    *Data = nullptr;
  if (Count)
    *Count = 0;
}

/// Evaluates and returns output 0 as a scalar of type T.
template <typename T>
mlbridge_status evaluateScalar(mlbridge_runner *Runner, T *Result) {
  return runnerCall(Runner, true, [&](mlbridge_runner &H) -> Error {
    if (!Result)
      return nullArgument("result");
    if (H.Broken)
      return brokenByException();
    auto V = H.Runner->evaluate<T>();
    if (!V)
      return V.takeError();
    *Result = *V;
    return Error::success();
  });
}

} // namespace

extern "C" {

const char *mlbridge_version(void) { return MLBRIDGE_VERSION_STRING; }

int mlbridge_api_version(void) { return MLBRIDGE_C_API_VERSION; }

const char *mlbridge_status_name(mlbridge_status status) {
  switch (rawEnum(status)) {
  case MLBRIDGE_OK:
    return "ok";
  case MLBRIDGE_INVALID_ARGUMENT:
    return "invalid_argument";
  case MLBRIDGE_PROTOCOL:
    return "protocol";
  case MLBRIDGE_TYPE_MISMATCH:
    return "type_mismatch";
  case MLBRIDGE_TIMEOUT:
    return "timeout";
  case MLBRIDGE_PEER_CLOSED:
    return "peer_closed";
  case MLBRIDGE_IO:
    return "io";
  case MLBRIDGE_TOO_LARGE:
    return "too_large";
  case MLBRIDGE_MODEL_FAILURE:
    return "model_failure";
  case MLBRIDGE_UNSUPPORTED:
    return "unsupported";
  case MLBRIDGE_BROKEN:
    return "broken";
  case MLBRIDGE_OUT_OF_MEMORY:
    return "out_of_memory";
  default:
    return "unknown";
  }
}

const char *mlbridge_error_message(const mlbridge_error *error) {
  return error ? error->Message.c_str() : "";
}

mlbridge_status mlbridge_error_status(const mlbridge_error *error) {
  return error ? error->Status : MLBRIDGE_OK;
}

void mlbridge_error_free(mlbridge_error *error) {
  if (error == &OutOfMemoryError)
    return;
  // Takes back what reportCreation() handed to C.
  std::unique_ptr<mlbridge_error> Owned(error);
}

void mlbridge_runner_destroy(mlbridge_runner *runner) {
  // Takes back what createRunner() handed to C; destructors do not throw.
  std::unique_ptr<mlbridge_runner> Owned(runner);
}

size_t mlbridge_runner_num_inputs(const mlbridge_runner *runner) {
  return runner ? runner->Inputs.size() : 0;
}

size_t mlbridge_runner_num_outputs(const mlbridge_runner *runner) {
  return runner ? runner->Outputs.size() : 0;
}

mlbridge_status mlbridge_runner_input_spec(const mlbridge_runner *runner,
                                           size_t index,
                                           mlbridge_tensor_spec *spec) {
  return runnerCall(runner, false, [&](mlbridge_runner &H) -> Error {
    if (!spec)
      return nullArgument("spec");
    if (Error E = checkIndex(H.Inputs, index, "input"))
      return E;
    describe(H.Inputs[index], spec);
    return Error::success();
  });
}

mlbridge_status mlbridge_runner_output_spec(const mlbridge_runner *runner,
                                            size_t index,
                                            mlbridge_tensor_spec *spec) {
  return runnerCall(runner, false, [&](mlbridge_runner &H) -> Error {
    if (!spec)
      return nullArgument("spec");
    if (Error E = checkIndex(H.Outputs, index, "output"))
      return E;
    describe(H.Outputs[index], spec);
    return Error::success();
  });
}

mlbridge_status mlbridge_runner_input_index(mlbridge_runner *runner,
                                            const char *name, size_t *index) {
  return runnerCall(runner, false, [&](mlbridge_runner &H) -> Error {
    if (!index)
      return nullArgument("index");
    auto I = findByName(*H.Runner, name, true);
    if (!I)
      return I.takeError();
    *index = *I;
    return Error::success();
  });
}

mlbridge_status mlbridge_runner_input(mlbridge_runner *runner, size_t index,
                                      mlbridge_dtype dtype, void **data,
                                      size_t *count) {
  clearOut(data, count);
  long long AskedType = rawEnum(dtype);
  return runnerCall(runner, false, [&](mlbridge_runner &H) -> Error {
    if (!data)
      return nullArgument("data");
    return inputBuffer(H, index, AskedType, data, count);
  });
}

mlbridge_status mlbridge_runner_input_by_name(mlbridge_runner *runner,
                                              const char *name,
                                              mlbridge_dtype dtype, void **data,
                                              size_t *count) {
  clearOut(data, count);
  long long AskedType = rawEnum(dtype);
  return runnerCall(runner, false, [&](mlbridge_runner &H) -> Error {
    if (!data)
      return nullArgument("data");
    auto I = findByName(*H.Runner, name, true);
    if (!I)
      return I.takeError();
    return inputBuffer(H, *I, AskedType, data, count);
  });
}

mlbridge_status mlbridge_runner_evaluate(mlbridge_runner *runner) {
  return runnerCall(runner, true, [&](mlbridge_runner &H) -> Error {
    if (H.Broken)
      return brokenByException();
    return H.Runner->evaluate();
  });
}

mlbridge_status mlbridge_runner_output(mlbridge_runner *runner, size_t index,
                                       mlbridge_dtype dtype, const void **data,
                                       size_t *count) {
  clearOut(data, count);
  long long AskedType = rawEnum(dtype);
  return runnerCall(runner, false, [&](mlbridge_runner &H) -> Error {
    if (!data)
      return nullArgument("data");
    return outputBuffer(H, index, AskedType, data, count);
  });
}

mlbridge_status mlbridge_runner_output_by_name(mlbridge_runner *runner,
                                               const char *name,
                                               mlbridge_dtype dtype,
                                               const void **data,
                                               size_t *count) {
  clearOut(data, count);
  long long AskedType = rawEnum(dtype);
  return runnerCall(runner, false, [&](mlbridge_runner &H) -> Error {
    if (!data)
      return nullArgument("data");
    auto I = findByName(*H.Runner, name, false);
    if (!I)
      return I.takeError();
    return outputBuffer(H, *I, AskedType, data, count);
  });
}

mlbridge_status mlbridge_runner_evaluate_int64(mlbridge_runner *runner,
                                               int64_t *result) {
  return evaluateScalar(runner, result);
}

mlbridge_status mlbridge_runner_evaluate_float(mlbridge_runner *runner,
                                               float *result) {
  return evaluateScalar(runner, result);
}

mlbridge_status mlbridge_runner_switch_context(mlbridge_runner *runner,
                                               const char *name) {
  return runnerCall(runner, true, [&](mlbridge_runner &H) -> Error {
    if (!name)
      return nullArgument("name");
    if (H.Broken)
      return brokenByException();
    return H.Runner->switchContext(name);
  });
}

const char *mlbridge_runner_metadata(const mlbridge_runner *runner,
                                     const char *key) {
  if (!runner || !key)
    return nullptr;
  // The value is a std::string the runner keeps: NUL-terminated.
  auto Value = runner->Runner->metadata(key);
  return Value ? Value->data() : nullptr;
}

const char *mlbridge_runner_last_error(const mlbridge_runner *runner) {
  if (!runner)
    return "runner is NULL";
  if (runner->LastErrorLost)
    return "out of memory (the error message could not be kept)";
  return runner->LastError.c_str();
}

} // extern "C"

namespace mlbridge {
namespace capi {

mlbridge_status reportCreation(mlbridge_error **ErrorOut, mlbridge_status S,
                               const char *Message) noexcept {
  if (!ErrorOut)
    return S;
  try {
    // Ownership passes to C; mlbridge_error_free() takes it back.
    *ErrorOut = std::make_unique<mlbridge_error>(
                    mlbridge_error{S, std::string(Message)})
                    .release();
  } catch (...) {
    *ErrorOut = &OutOfMemoryError;
  }
  return S;
}

} // namespace capi
} // namespace mlbridge

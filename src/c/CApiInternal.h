//===- c/CApiInternal.h - Shared parts of the C API -------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What lies behind the C API's opaque handles (mlbridge_runner,
/// mlbridge_error) and the helpers every entry point uses: status mapping,
/// argument checks, spec conversion and the exception barriers that keep
/// C++ exceptions from crossing into C.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_C_CAPIINTERNAL_H
#define MLBRIDGE_C_CAPIINTERNAL_H

#include "mlbridge/ModelRunner.h"
#include "mlbridge/mlbridge.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

/// A creation failure handed to C: a status and a message.
struct mlbridge_error {
  /// The failure's status (never MLBRIDGE_OK).
  mlbridge_status Status;
  /// The failure's message.
  std::string Message;
};

/// A C handle on a C++ ModelRunner. Created by the mlbridge_*_create
/// functions, freed by mlbridge_runner_destroy().
struct mlbridge_runner {
  /// A spec as the C API reports it; the strings and shapes live here so the
  /// pointers handed out stay valid as long as the runner.
  struct CSpec {
    /// The tensor's name.
    std::string Name;
    /// The element type.
    mlbridge_dtype DType;
    /// The row-major shape.
    std::vector<int64_t> Shape;
    /// Number of elements.
    size_t Count;
  };

  /// The runner itself.
  std::unique_ptr<mlbridge::ModelRunner> Runner;
  /// Copies of the input specs, in the runner's order.
  std::vector<CSpec> Inputs;
  /// Copies of the output specs, in the runner's order.
  std::vector<CSpec> Outputs;
  /// The channel base of a pipe runner; empty for other runners.
  std::string Channel;
  /// True for pipe runners (mlbridge_pipe_runner_channel).
  bool IsPipe = false;
  /// The message of the last failed call (mlbridge_runner_last_error).
  std::string LastError;
  /// True when the last message could not be stored (out of memory).
  bool LastErrorLost = false;
  /// Set when an unexpected exception left the C++ runner in an unknown
  /// state: evaluate and switch_context fail fast with MLBRIDGE_BROKEN.
  bool Broken = false;

  /// Records \p Message as the last error; never throws.
  void setError(const char *Message) noexcept;
  /// Records "\p Prefix\p Detail" as the last error; never throws.
  void setError(const char *Prefix, const char *Detail) noexcept;
};

namespace mlbridge {
namespace capi {

/// The status that mirrors \p Code (same numbering).
mlbridge_status toStatus(ErrorCode Code);

/// The value of the C enum \p V as the int a C caller wrote, read without
/// loading an out-of-range value as the enum type (C callers may pass any
/// int; C++ and UBSan's enum check reject such loads).
template <typename E> long long rawEnum(const E &V) {
  static_assert(std::is_enum<E>::value && sizeof(E) == sizeof(int),
                "the C API's enums are int-sized");
  int R;
  std::memcpy(&R, &V, sizeof R);
  return R;
}

/// The DType of \p DTypeValue, or an InvalidArgument error naming \p What.
Expected<DType> toDType(long long DTypeValue, const std::string &What);

/// The C spelling of \p T.
mlbridge_dtype toCDType(DType T);

/// Converts \p Num C specs at \p Specs into TensorSpecs; \p What names the
/// array in messages ("inputs" or "outputs", whose count is "num_<What>").
Expected<std::vector<TensorSpec>> toSpecs(const mlbridge_tensor_spec *Specs,
                                          size_t Num, const char *What);

/// Wraps \p Runner into a new C handle (copies its specs).
std::unique_ptr<mlbridge_runner>
makeHandle(std::unique_ptr<ModelRunner> Runner);

/// Builds an InvalidArgument error "\p Name is NULL".
Error nullArgument(const char *Name);

/// Hands the failure \p E to C through \p ErrorOut (may be NULL) and returns
/// its status; never throws (without memory, *ErrorOut is a static
/// out-of-memory error that mlbridge_error_free() ignores).
mlbridge_status reportCreation(mlbridge_error **ErrorOut, mlbridge_status S,
                               const char *Message) noexcept;

/// Runs \p Body, which makes a runner, and hands the outcome to C: on
/// success the runner goes to *\p RunnerOut; on failure *\p RunnerOut is NULL
/// and *\p ErrorOut (if given) receives the message. No exception escapes.
template <typename BodyT>
mlbridge_status createRunner(mlbridge_runner **RunnerOut,
                             mlbridge_error **ErrorOut, BodyT &&Body) noexcept {
  if (RunnerOut)
    *RunnerOut = nullptr;
  try {
    if (!RunnerOut)
      return reportCreation(ErrorOut, MLBRIDGE_INVALID_ARGUMENT,
                            "runner is NULL");
    Expected<std::unique_ptr<mlbridge_runner>> R = Body();
    if (!R)
      return reportCreation(ErrorOut, toStatus(R.error().code()),
                            R.error().message().c_str());
    // Ownership passes to C; mlbridge_runner_destroy() takes it back.
    *RunnerOut = R->release();
    return MLBRIDGE_OK;
  } catch (const std::bad_alloc &) {
    return reportCreation(ErrorOut, MLBRIDGE_OUT_OF_MEMORY,
                          "out of memory creating the runner");
  } catch (const std::exception &E) {
    std::string Message;
    try {
      Message = std::string("internal error creating the runner: ") + E.what();
    } catch (...) {
    }
    return reportCreation(ErrorOut, MLBRIDGE_BROKEN,
                          Message.empty() ? "internal error creating the runner"
                                          : Message.c_str());
  } catch (...) {
    return reportCreation(ErrorOut, MLBRIDGE_BROKEN,
                          "internal error creating the runner");
  }
}

/// Runs \p Body (returning an Error) on \p R: a failure is recorded as the
/// runner's last error and returned as a status. No exception escapes; with
/// \p Fatal (evaluation, context switches) an exception also marks the
/// runner broken, since the C++ runner may be left mid-protocol.
template <typename RunnerT, typename BodyT>
mlbridge_status runnerCall(RunnerT *R, bool Fatal, BodyT &&Body) noexcept {
  if (!R)
    return MLBRIDGE_INVALID_ARGUMENT;
  // The C API's const queries still record their failures.
  mlbridge_runner &H = const_cast<mlbridge_runner &>(*R);
  try {
    Error E = Body(H);
    if (!E)
      return MLBRIDGE_OK;
    H.setError(E.message().c_str());
    return toStatus(E.code());
  } catch (const std::bad_alloc &) {
    H.Broken |= Fatal;
    H.setError("out of memory");
    return MLBRIDGE_OUT_OF_MEMORY;
  } catch (const std::exception &E) {
    H.Broken |= Fatal;
    H.setError("internal error: ", E.what());
    return MLBRIDGE_BROKEN;
  } catch (...) {
    H.Broken |= Fatal;
    H.setError("internal error: unknown exception");
    return MLBRIDGE_BROKEN;
  }
}

} // namespace capi
} // namespace mlbridge

#endif // MLBRIDGE_C_CAPIINTERNAL_H

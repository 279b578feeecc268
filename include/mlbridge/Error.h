//===- mlbridge/Error.h - Errors as values ----------------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Error and Expected<T>: every fallible mlbridge call returns one of these.
/// The library never throws across its API, never aborts and never prints: a
/// compiler inspects the error and falls back to its default heuristic.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_ERROR_H
#define MLBRIDGE_ERROR_H

#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace mlbridge {

/// What kind of failure an Error reports; stable, so callers can branch on it.
enum class ErrorCode {
  Success = 0,
  /// A caller passed something invalid (bad spec, unknown name, bad option).
  InvalidArgument,
  /// The peer sent bytes that break the protocol or the wire format.
  Protocol,
  /// A reply's tensor has another dtype or size than declared.
  TypeMismatch,
  /// A blocking operation ran past its deadline.
  Timeout,
  /// The peer closed its end (EOF, EPIPE) or never opened it.
  PeerClosed,
  /// A system call failed (open, read, write, mkfifo, ...).
  IO,
  /// A message exceeds the configured size limit.
  TooLarge,
  /// The model side reported that it failed to compute a result.
  ModelFailure,
  /// The requested feature is not available in this build.
  Unsupported,
  /// The runner is unusable because of an earlier error.
  Broken,
};

/// Returns a short lowercase name for \p Code, e.g. "timeout".
const char *errorCodeName(ErrorCode Code);

/// The result of an operation that returns nothing: success, or a code plus a
/// human-readable message. Cheap to pass around when successful (one null
/// pointer); converts to true when it holds a failure, like llvm::Error.
class [[nodiscard]] Error {
public:
  /// Constructs a success value.
  Error() = default;

  /// Constructs a failure with \p Code and \p Message.
  Error(ErrorCode Code, std::string Message);

  /// Returns a success value.
  static Error success() { return Error(); }

  /// True when this holds a failure.
  explicit operator bool() const { return Payload != nullptr; }

  /// The failure's code, or ErrorCode::Success.
  ErrorCode code() const {
    return Payload ? Payload->Code : ErrorCode::Success;
  }

  /// The failure's message, or an empty string on success.
  const std::string &message() const;

  /// "code: message", for logs.
  std::string toString() const;

  /// Returns a copy of this error whose message is "Context: message".
  Error withContext(const std::string &Context) const;

  /// Copies share the same immutable payload.
  Error(const Error &) = default;
  /// Copy assignment.
  Error &operator=(const Error &) = default;
  /// Move construction.
  Error(Error &&) noexcept = default;
  /// Move assignment.
  Error &operator=(Error &&) noexcept = default;

private:
  struct Info {
    ErrorCode Code;
    std::string Message;
  };
  std::shared_ptr<const Info> Payload;
};

/// Makes an Error from a code and a message built by concatenation.
template <typename... Parts>
Error makeError(ErrorCode Code, const Parts &...P) {
  std::string Message;
  (Message.append(P), ...);
  return Error(Code, std::move(Message));
}

/// Either a value of type T or an Error. Check with `if (!E)` before using
/// `*E`; `takeError()` moves the error out.
template <typename T> class [[nodiscard]] Expected {
public:
  /// Holds a value.
  Expected(T Value) : HasValue(true) { new (&Storage) T(std::move(Value)); }

  /// Holds a failure; \p E must be a failure.
  Expected(Error E) : HasValue(false), Err(std::move(E)) {}

  /// Converts from an Expected of a convertible type (e.g. unique_ptr of a
  /// derived class).
  template <typename U,
            typename = std::enable_if_t<std::is_convertible<U, T>::value>>
  Expected(Expected<U> &&Other) : HasValue(bool(Other)) {
    if (HasValue)
      new (&Storage) T(std::move(*Other));
    else
      Err = Other.takeError();
  }

  /// Copy construction.
  Expected(const Expected &Other) : HasValue(Other.HasValue), Err(Other.Err) {
    if (HasValue)
      new (&Storage) T(*Other);
  }

  /// Move construction.
  Expected(Expected &&Other) noexcept
      : HasValue(Other.HasValue), Err(std::move(Other.Err)) {
    if (HasValue)
      new (&Storage) T(std::move(*Other));
  }

  Expected &operator=(const Expected &) = delete;
  Expected &operator=(Expected &&) = delete;

  ~Expected() {
    if (HasValue)
      value().~T();
  }

  /// True when a value is held.
  explicit operator bool() const { return HasValue; }

  /// The held value; only valid when holding one.
  T &operator*() { return value(); }
  /// The held value; only valid when holding one.
  const T &operator*() const { return value(); }
  /// Member access on the held value.
  T *operator->() { return &value(); }
  /// Member access on the held value.
  const T *operator->() const { return &value(); }

  /// The held error (success when holding a value).
  const Error &error() const { return Err; }

  /// Moves the error out (success when holding a value).
  Error takeError() { return std::move(Err); }

private:
  T &value() { return *std::launder(reinterpret_cast<T *>(&Storage)); }
  const T &value() const {
    return *std::launder(reinterpret_cast<const T *>(&Storage));
  }

  std::aligned_storage_t<sizeof(T), alignof(T)> Storage;
  bool HasValue;
  Error Err;
};

} // namespace mlbridge

#endif // MLBRIDGE_ERROR_H

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

#include <cassert>
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

  /// Constructs a failure with \p Code and \p Message. A failure never has
  /// the code Success: given Success, it is an InvalidArgument failure whose
  /// message says so.
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

/// Either a value of type T or an Error, never neither.
///
/// Contract: check with `if (!E)` (or `if (E)`) before using `*E` or
/// `E->`; `takeError()` moves the error out. Dereferencing an Expected that
/// holds an error is a programming error: it fails an assertion in builds
/// without NDEBUG and is undefined behaviour otherwise (no abort, no
/// exception in release builds, like std::optional). Code that cannot check
/// first uses the checked accessors instead: `get()` (nullptr on error) or
/// `valueOr(Default)`. `error()` and `takeError()` are always defined: on a
/// value they return success.
template <typename T> class [[nodiscard]] Expected {
public:
  /// Holds a value.
  Expected(T Value) : HasValue(true) { new (Storage) T(std::move(Value)); }

  /// Holds the failure \p E. A success \p E (one that holds no error) would
  /// leave the Expected with neither a value nor an error; it becomes the
  /// InvalidArgument error "Expected constructed from a success Error"
  /// instead, so the mistake shows where it is made.
  Expected(Error E)
      : HasValue(false), Err(E ? std::move(E) : constructedFromSuccess()) {}

  /// Converts from an Expected of a convertible type (e.g. unique_ptr of a
  /// derived class).
  template <typename U,
            typename = std::enable_if_t<std::is_convertible<U, T>::value>>
  Expected(Expected<U> &&Other) : HasValue(bool(Other)) {
    if (HasValue)
      new (Storage) T(std::move(*Other));
    else
      Err = Other.takeError();
  }

  /// Copy construction.
  Expected(const Expected &Other) : HasValue(Other.HasValue), Err(Other.Err) {
    if (HasValue)
      new (Storage) T(Other.value());
  }

  /// Move construction.
  Expected(Expected &&Other) noexcept
      : HasValue(Other.HasValue), Err(std::move(Other.Err)) {
    if (HasValue)
      new (Storage) T(std::move(Other.value()));
  }

  /// Copy assignment: destroys the held value, then copies \p Other's.
  Expected &operator=(const Expected &Other) {
    if (this != &Other) {
      destroyValue();
      Err = Other.Err;
      if (Other.HasValue) {
        new (Storage) T(Other.value());
        HasValue = true;
      }
    }
    return *this;
  }

  /// Move assignment: destroys the held value, then moves \p Other's in.
  Expected &operator=(Expected &&Other) noexcept {
    if (this != &Other) {
      destroyValue();
      Err = std::move(Other.Err);
      if (Other.HasValue) {
        new (Storage) T(std::move(Other.value()));
        HasValue = true;
      }
    }
    return *this;
  }

  ~Expected() { destroyValue(); }

  /// True when a value is held.
  explicit operator bool() const { return HasValue; }

  /// The held value. Precondition: a value is held (asserted in builds
  /// without NDEBUG; undefined behaviour otherwise). See get() and valueOr().
  T &operator*() {
    assert(HasValue && "dereferencing an Expected that holds an error");
    return value();
  }
  /// The held value; same precondition as the non-const operator*.
  const T &operator*() const {
    assert(HasValue && "dereferencing an Expected that holds an error");
    return value();
  }
  /// Member access on the held value; same precondition as operator*.
  T *operator->() {
    assert(HasValue && "dereferencing an Expected that holds an error");
    return &value();
  }
  /// Member access on the held value; same precondition as operator*.
  const T *operator->() const {
    assert(HasValue && "dereferencing an Expected that holds an error");
    return &value();
  }

  /// Checked access: the held value, or nullptr when holding an error.
  T *get() { return HasValue ? &value() : nullptr; }
  /// Checked access: the held value, or nullptr when holding an error.
  const T *get() const { return HasValue ? &value() : nullptr; }

  /// Checked access: a copy of the held value, or \p Default converted to T
  /// when holding an error.
  template <typename U> T valueOr(U &&Default) const & {
    return HasValue ? value() : static_cast<T>(std::forward<U>(Default));
  }
  /// Checked access: the held value moved out, or \p Default converted to T
  /// when holding an error.
  template <typename U> T valueOr(U &&Default) && {
    return HasValue ? std::move(value())
                    : static_cast<T>(std::forward<U>(Default));
  }

  /// The held error (success when holding a value).
  const Error &error() const { return Err; }

  /// Moves the error out (success when holding a value).
  Error takeError() { return std::move(Err); }

private:
  static Error constructedFromSuccess() {
    return Error(ErrorCode::InvalidArgument,
                 "Expected constructed from a success Error");
  }

  void destroyValue() {
    if (HasValue)
      value().~T();
    HasValue = false;
  }

  T &value() { return *std::launder(reinterpret_cast<T *>(Storage)); }
  const T &value() const {
    return *std::launder(reinterpret_cast<const T *>(Storage));
  }

  alignas(T) unsigned char Storage[sizeof(T)];
  bool HasValue;
  Error Err;
};

} // namespace mlbridge

#endif // MLBRIDGE_ERROR_H

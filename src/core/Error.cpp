//===- core/Error.cpp - Errors as values ----------------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/Error.h"

namespace mlbridge {

const char *errorCodeName(ErrorCode Code) {
  switch (Code) {
  case ErrorCode::Success:
    return "success";
  case ErrorCode::InvalidArgument:
    return "invalid argument";
  case ErrorCode::Protocol:
    return "protocol error";
  case ErrorCode::TypeMismatch:
    return "type mismatch";
  case ErrorCode::Timeout:
    return "timeout";
  case ErrorCode::PeerClosed:
    return "peer closed";
  case ErrorCode::IO:
    return "I/O error";
  case ErrorCode::TooLarge:
    return "message too large";
  case ErrorCode::ModelFailure:
    return "model failure";
  case ErrorCode::Unsupported:
    return "unsupported";
  case ErrorCode::Broken:
    return "runner broken";
  }
  return "unknown";
}

Error::Error(ErrorCode Code, std::string Message) {
  // A failure never carries the success code (a caller testing code() or a
  // C status would take it for success): it is a misuse, said so.
  if (Code == ErrorCode::Success) {
    Code = ErrorCode::InvalidArgument;
    Message = "failure made with ErrorCode::Success: " + Message;
  }
  Payload = std::make_shared<const Info>(Info{Code, std::move(Message)});
}

const std::string &Error::message() const {
  static const std::string Empty;
  return Payload ? Payload->Message : Empty;
}

std::string Error::toString() const {
  if (!Payload)
    return "success";
  return std::string(errorCodeName(Payload->Code)) + ": " + Payload->Message;
}

Error Error::withContext(const std::string &Context) const {
  if (!Payload)
    return *this;
  return Error(Payload->Code, Context + ": " + Payload->Message);
}

} // namespace mlbridge

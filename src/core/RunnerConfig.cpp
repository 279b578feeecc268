//===- core/RunnerConfig.cpp - The string form of a runner configuration --===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/RunnerConfig.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace mlbridge {
namespace {

/// A kind and its name in the string form.
struct KindName {
  /// The kind.
  RunnerKind Kind;
  /// Its name.
  const char *Name;
};

/// Every kind, in the order of the enum.
constexpr KindName Kinds[] = {
    {RunnerKind::Pipe, "pipe"},         {RunnerKind::Grpc, "grpc"},
    {RunnerKind::Onnx, "onnx"},         {RunnerKind::Aot, "aot"},
    {RunnerKind::Constant, "constant"}, {RunnerKind::Echo, "echo"},
    {RunnerKind::Torch, "torch"},
};

/// The names of every kind, for messages.
constexpr const char *KindList = "pipe, grpc, onnx, aot, constant, echo, torch";

/// The keys each kind accepts, for messages.
const char *keysOf(RunnerKind Kind) {
  switch (Kind) {
  case RunnerKind::Pipe:
    return "protocol, format, timeout_ms, connect_timeout_ms, "
           "call_timeout_ms, max_message_bytes";
  case RunnerKind::Grpc:
    return "mode, timeout_ms, connect_timeout_ms, call_timeout_ms, "
           "max_message_bytes";
  case RunnerKind::Onnx:
    return "threads, load";
  case RunnerKind::Torch:
    return "threads";
  case RunnerKind::Aot:
  case RunnerKind::Constant:
  case RunnerKind::Echo:
    break;
  }
  return "none";
}

/// Parses a whole decimal number in [\p Min, \p Max].
Expected<int64_t> parseInteger(std::string_view Text, int64_t Min, int64_t Max,
                               std::string_view What) {
  std::string Copy(Text);
  char *End = nullptr;
  errno = 0;
  long long V = std::strtoll(Copy.c_str(), &End, 10);
  bool Space = !Copy.empty() && std::isspace((unsigned char)Copy[0]);
  if (Copy.empty() || Space || *End || errno == ERANGE || V < Min || V > Max)
    return makeError(ErrorCode::InvalidArgument,
                     "runner configuration: ", std::string(What),
                     " must be a whole number from ", std::to_string(Min),
                     " to ", std::to_string(Max), ", got '", Copy, "'");
  return int64_t(V);
}

/// Applies one KEY=VALUE to \p C.
Error applyKey(RunnerConfig &C, std::string_view Key, std::string_view Value) {
  auto Bad = [&](const char *Accepted) {
    return makeError(ErrorCode::InvalidArgument,
                     "runner configuration: ", std::string(Key), " must be ",
                     Accepted, ", got '", std::string(Value), "'");
  };
  bool Pipe = C.Kind == RunnerKind::Pipe, Grpc = C.Kind == RunnerKind::Grpc;
  if (Pipe && Key == "protocol") {
    if (Value == "mlgo")
      C.Protocol = PipeProtocol::Mlgo;
    else if (Value == "extended")
      C.Protocol = PipeProtocol::Extended;
    else if (Value == "shm")
      C.Protocol = PipeProtocol::SharedMemory;
    else
      return Bad("mlgo, extended or shm");
    return Error::success();
  }
  if (Pipe && Key == "format") {
    auto F = parseFormat(Value);
    if (!F)
      return Bad("bitstream, json or protobuf");
    C.Serialization = *F;
    return Error::success();
  }
  if (Grpc && Key == "mode") {
    if (Value != "unary" && Value != "streaming")
      return Bad("unary or streaming");
    C.Streaming = Value == "streaming";
    return Error::success();
  }
  bool Connect = Key == "connect_timeout_ms", Call = Key == "call_timeout_ms";
  if ((Pipe || Grpc) && (Connect || Call || Key == "timeout_ms")) {
    auto Ms = parseInteger(Value, 0, MaxRunnerTimeoutMs, Key);
    if (!Ms)
      return Ms.takeError();
    if (!Call)
      C.ConnectTimeout = std::chrono::milliseconds(*Ms);
    if (!Connect)
      C.Timeout = std::chrono::milliseconds(*Ms);
    return Error::success();
  }
  if ((Pipe || Grpc) && Key == "max_message_bytes") {
    auto N = parseInteger(Value, 1, std::numeric_limits<int64_t>::max(), Key);
    if (!N)
      return N.takeError();
    C.MaxMessageBytes = size_t(*N);
    return Error::success();
  }
  if ((C.Kind == RunnerKind::Onnx || C.Kind == RunnerKind::Torch) &&
      Key == "threads") {
    auto N = parseInteger(Value, 1, 1024, Key);
    if (!N)
      return N.takeError();
    C.Threads = int(*N);
    return Error::success();
  }
  if (C.Kind == RunnerKind::Onnx && Key == "load") {
    if (Value != "lazy" && Value != "eager")
      return Bad("lazy or eager");
    C.LazyLoad = Value == "lazy";
    return Error::success();
  }
  return makeError(ErrorCode::InvalidArgument, "runner configuration: '",
                   runnerKindName(C.Kind), "' takes no key '", std::string(Key),
                   "' (its keys: ", keysOf(C.Kind), ")");
}

} // namespace

Error RunnerConfig::check() const {
  const RunnerConfig &C = *this;
  switch (C.Kind) {
  case RunnerKind::Pipe:
    if (C.Protocol != PipeProtocol::Extended &&
        C.Serialization != Format::Bitstream)
      return makeError(
          ErrorCode::InvalidArgument,
          "runner configuration: format=", formatName(C.Serialization),
          " needs protocol=extended (LLVM's protocol is "
          "bitstream only)");
    return Error::success(); // an empty channel: a private one
  case RunnerKind::Constant:
    return C.constant().takeError();
  case RunnerKind::Grpc:
  case RunnerKind::Onnx:
  case RunnerKind::Aot:
  case RunnerKind::Echo:
  case RunnerKind::Torch:
    break;
  }
  if (!C.Argument.empty())
    return Error::success();
  static const char *const What[] = {"",
                                     "a target (grpc:unix:PATH or "
                                     "grpc:HOST:PORT)",
                                     "a model file (onnx:FILE)",
                                     "a module (aot:FILE.so)",
                                     "",
                                     "an input name (echo:NAME)",
                                     "a TorchScript file (torch:FILE.pt)"};
  return makeError(ErrorCode::InvalidArgument, "runner configuration: '",
                   runnerKindName(C.Kind), "' needs ", What[int(C.Kind)]);
}

const char *runnerKindName(RunnerKind Kind) {
  for (const KindName &K : Kinds)
    if (K.Kind == Kind)
      return K.Name;
  return "unknown";
}

Expected<RunnerKind> parseRunnerKind(std::string_view Name) {
  for (const KindName &K : Kinds)
    if (Name == K.Name)
      return K.Kind;
  return makeError(ErrorCode::InvalidArgument, "unknown runner '",
                   std::string(Name), "' (", KindList, ")");
}

Expected<int64_t> RunnerConfig::constant() const {
  return parseInteger(Argument, std::numeric_limits<int64_t>::min(),
                      std::numeric_limits<int64_t>::max(), "the constant");
}

Expected<RunnerConfig> RunnerConfig::parse(std::string_view Text) {
  size_t Comma = Text.find(',');
  std::string_view Head = Text.substr(0, Comma);
  size_t Colon = Head.find(':');
  std::string_view KindText = Head.substr(0, Colon);
  auto Kind = parseRunnerKind(KindText);
  if (!Kind)
    return makeError(ErrorCode::InvalidArgument, "runner configuration '",
                     std::string(Text), "': ", Kind.error().message());
  RunnerConfig C;
  C.Kind = *Kind;
  if (Colon != std::string_view::npos)
    C.Argument = std::string(Head.substr(Colon + 1));
  while (Comma != std::string_view::npos) {
    size_t Next = Text.find(',', Comma + 1);
    std::string_view Item = Text.substr(Comma + 1, Next - Comma - 1);
    size_t Eq = Item.find('=');
    if (Eq == std::string_view::npos || Eq == 0)
      return makeError(ErrorCode::InvalidArgument, "runner configuration '",
                       std::string(Text), "': expected KEY=VALUE, got '",
                       std::string(Item), "'");
    if (Error E = applyKey(C, Item.substr(0, Eq), Item.substr(Eq + 1)))
      return E;
    Comma = Next;
  }
  if (Error E = C.check())
    return E;
  return C;
}

std::string RunnerConfig::str() const {
  const RunnerConfig Default;
  std::string Out = runnerKindName(Kind);
  if (!Argument.empty())
    Out += ":" + Argument;
  if (Kind == RunnerKind::Pipe) {
    if (Protocol == PipeProtocol::Extended)
      Out += ",protocol=extended";
    else if (Protocol == PipeProtocol::SharedMemory)
      Out += ",protocol=shm";
    if (Serialization != Default.Serialization)
      Out += std::string(",format=") + formatName(Serialization);
  }
  if (Kind == RunnerKind::Grpc && Streaming)
    Out += ",mode=streaming";
  if (Kind == RunnerKind::Pipe || Kind == RunnerKind::Grpc) {
    if (ConnectTimeout == Timeout) {
      if (Timeout != Default.Timeout)
        Out += ",timeout_ms=" + std::to_string(Timeout.count());
    } else {
      if (ConnectTimeout != Default.ConnectTimeout)
        Out += ",connect_timeout_ms=" + std::to_string(ConnectTimeout.count());
      if (Timeout != Default.Timeout)
        Out += ",call_timeout_ms=" + std::to_string(Timeout.count());
    }
    if (MaxMessageBytes != Default.MaxMessageBytes)
      Out += ",max_message_bytes=" + std::to_string(MaxMessageBytes);
  }
  if ((Kind == RunnerKind::Onnx || Kind == RunnerKind::Torch) &&
      Threads != Default.Threads)
    Out += ",threads=" + std::to_string(Threads);
  if (Kind == RunnerKind::Onnx && !LazyLoad)
    Out += ",load=eager";
  return Out;
}

bool operator==(const RunnerConfig &A, const RunnerConfig &B) {
  return A.Kind == B.Kind && A.Argument == B.Argument &&
         A.Protocol == B.Protocol && A.Serialization == B.Serialization &&
         A.Streaming == B.Streaming && A.ConnectTimeout == B.ConnectTimeout &&
         A.Timeout == B.Timeout && A.Threads == B.Threads &&
         A.LazyLoad == B.LazyLoad && A.MaxMessageBytes == B.MaxMessageBytes;
}

} // namespace mlbridge

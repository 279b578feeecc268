//===- pipe/InteractiveProtocol.cpp - LLVM's interactive lines ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "pipe/InteractiveProtocol.h"

#include "support/Json.h"

namespace mlbridge {
namespace interactive {

namespace {
/// Reads the value at the reader's position as a TensorSpec.
Expected<TensorSpec> readSpec(json::Reader &R, std::string_view Line) {
  size_t Start = R.offset();
  if (Error Skip = R.skipValue())
    return Skip;
  return TensorSpec::fromJSON(Line.substr(Start, R.offset() - Start));
}
} // namespace

Expected<Header> parseHeader(std::string_view Line) {
  std::vector<TensorSpec> Features;
  std::optional<TensorSpec> Advice;
  json::Reader R(Line);
  std::string Scratch;
  Error E = R.forEachMember(Scratch, [&](std::string_view Key) -> Error {
    if (Key == "features")
      return R.forEachElement([&]() -> Error {
        if (Features.size() >= MaxFeatures)
          return makeError(ErrorCode::TooLarge, "more than ",
                           std::to_string(MaxFeatures), " features");
        auto Spec = readSpec(R, Line);
        if (!Spec)
          return Spec.takeError();
        Features.push_back(std::move(*Spec));
        return Error::success();
      });
    if (Key == "advice") {
      auto Spec = readSpec(R, Line);
      if (!Spec)
        return Spec.takeError();
      Advice = std::move(*Spec);
      return Error::success();
    }
    if (Key == "score")
      return makeError(ErrorCode::Unsupported,
                       "the compiler logs a score (a development build's "
                       "training mode), not an interactive session");
    return R.skipValue();
  });
  if (E)
    return E.withContext("LLVM's header");
  if (Error End = R.expectEnd())
    return End.withContext("LLVM's header");
  if (Features.empty() || !Advice)
    return makeError(ErrorCode::Protocol,
                     "LLVM's header declares no features or no advice");
  size_t Bytes = 0;
  for (const TensorSpec &S : Features) {
    Bytes += S.byteSize();
    if (Bytes > MaxObservationBytes)
      return makeError(
          ErrorCode::TooLarge, "LLVM's features take more than the budget of ",
          std::to_string(MaxObservationBytes), " bytes per question");
  }
  if (Advice->byteSize() > MaxAdviceBytes)
    return makeError(ErrorCode::TooLarge, "LLVM's advice '", Advice->name(),
                     "' takes ", std::to_string(Advice->byteSize()),
                     " bytes, more than the budget of ",
                     std::to_string(MaxAdviceBytes), " bytes per answer");
  return Header{std::move(Features), std::move(*Advice)};
}

Expected<QuestionLine> parseQuestionLine(std::string_view Line) {
  QuestionLine Q;
  bool Seen = false;
  json::Reader R(Line);
  std::string KeyScratch, ValueScratch;
  Error E = R.forEachMember(KeyScratch, [&](std::string_view Key) -> Error {
    if (Seen)
      return R.fail("more than one key in a question line");
    Seen = true;
    if (Key == "observation") {
      Q.Observation = true;
      auto N = R.readInt();
      return N ? Error::success() : N.takeError();
    }
    if (Key == "context") {
      auto Name = R.readString(ValueScratch);
      if (!Name)
        return Name.takeError();
      Q.Context.assign(*Name);
      return Error::success();
    }
    return R.fail("unexpected key in a question line");
  });
  if (E)
    return E.withContext("a line of the compiler");
  if (Error End = R.expectEnd())
    return End.withContext("a line of the compiler");
  if (!Seen)
    return makeError(ErrorCode::Protocol, "an empty question line");
  return Q;
}

} // namespace interactive
} // namespace mlbridge

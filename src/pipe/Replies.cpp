//===- pipe/Replies.cpp - Replies read in extended mode -------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "pipe/Replies.h"

#include "support/Json.h"

#include <optional>
#include <string>

namespace mlbridge {

Error parseHandshakeReply(std::string_view Line) {
  json::Reader R(Line);
  std::string Scratch, ValueScratch, Refusal;
  std::optional<int64_t> Version;
  bool Refused = false;
  Error E = R.forEachMember(Scratch, [&](std::string_view Key) -> Error {
    if (Key == "mlbridge") {
      auto V = R.readInt();
      if (!V)
        return V.takeError();
      Version = *V;
      return Error::success();
    }
    if (Key == "error") {
      auto S = R.readString(ValueScratch);
      if (!S)
        return S.takeError();
      Refusal.assign(S->substr(0, 4096));
      Refused = true;
      return Error::success();
    }
    return R.skipValue();
  });
  if (E)
    return E.withContext("handshake reply");
  if (!Version)
    return makeError(ErrorCode::Protocol,
                     "handshake reply lacks the \"mlbridge\" version");
  if (Refused)
    return makeError(ErrorCode::ModelFailure,
                     "the model side refused the session: ", Refusal);
  if (*Version != ExtendedProtocolVersion)
    return makeError(ErrorCode::Protocol,
                     "the model side speaks mlbridge "
                     "protocol version ",
                     std::to_string(*Version), ", this library speaks ",
                     std::to_string(ExtendedProtocolVersion));
  return Error::success();
}

Expected<ReplyFrame> readReplyFrame(fifo::Reader &Reader,
                                    size_t MaxMessageBytes,
                                    fifo::Deadline Until) {
  auto Head = Reader.readExact(FrameHeader::Size, Until, "waiting for a reply");
  if (!Head)
    return Head.takeError();
  FrameHeader H = FrameHeader::read(Head->data());
  if (H.Length > MaxMessageBytes)
    return makeError(ErrorCode::TooLarge, "reply of ", std::to_string(H.Length),
                     " bytes exceeds the limit of ",
                     std::to_string(MaxMessageBytes));
  if (H.Kind != uint32_t(FrameKind::Result) &&
      H.Kind != uint32_t(FrameKind::Error))
    return makeError(ErrorCode::Protocol, "unexpected frame kind ",
                     std::to_string(H.Kind), " where a reply was expected");
  auto Payload = Reader.readExact(H.Length, Until, "reading a reply");
  if (!Payload)
    return Payload.takeError();
  return ReplyFrame{FrameKind(H.Kind), *Payload};
}

} // namespace mlbridge

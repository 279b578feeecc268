//===- pipe/Replies.h - Replies read in extended mode -----------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: parsing the bytes the model side sends in the extended pipe
/// protocol (docs/protocol.md): the handshake reply line and reply frames.
/// Kept apart from PipeModelRunner so that they can be fuzzed without FIFOs
/// (tests/fuzz/).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_REPLIES_H
#define MLBRIDGE_PIPE_REPLIES_H

#include "mlbridge/Error.h"
#include "pipe/Fifo.h"
#include "pipe/FrameHeader.h"

#include <cstdint>
#include <string_view>

namespace mlbridge {

/// Version of the extended protocol this library speaks.
inline constexpr int64_t ExtendedProtocolVersion = 1;

/// Longest handshake reply line accepted.
inline constexpr size_t MaxHandshakeLine = 64 * 1024;

/// Checks the handshake reply \p Line (without its '\n'): success for
/// `{"mlbridge":1}`, ModelFailure carrying the model side's reason for a
/// refusal, Protocol for anything else (malformed JSON, no or another
/// version).
Error parseHandshakeReply(std::string_view Line);

/// One reply frame: its kind (Result or Error) and payload.
struct ReplyFrame {
  /// FrameKind::Result or FrameKind::Error.
  FrameKind Kind;
  /// The payload, valid until the reader's next call.
  std::string_view Payload;
};

/// Reads one reply frame from \p Reader before \p Until. Fails on a transport
/// error, a payload longer than \p MaxMessageBytes (TooLarge, checked before
/// reading it) or a kind other than RESULT/ERROR: all of which leave the
/// channel out of step.
Expected<ReplyFrame> readReplyFrame(fifo::Reader &Reader,
                                    size_t MaxMessageBytes,
                                    fifo::Deadline Until);

} // namespace mlbridge

#endif // MLBRIDGE_PIPE_REPLIES_H

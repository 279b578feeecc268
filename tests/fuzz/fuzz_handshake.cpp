//===- fuzz_handshake.cpp - Fuzz the extended-mode handshake reply --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// parseHandshakeReply (pipe/Replies.h), what PipeModelRunner::handshake()
// does with the first line a model side sends in extended mode: the input
// without its trailing '\n' (fuzz_frames reads such lines through
// fifo::Reader::readLine). Checks that every rejection is Protocol or
// ModelFailure (a refusal).
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "pipe/Replies.h"

using namespace mlbridge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string_view Line = fuzz::asView(Data, Size);
  if (!Line.empty() && Line.back() == '\n')
    Line.remove_suffix(1);
  Error E = parseHandshakeReply(Line);
  if (E && E.code() != ErrorCode::Protocol &&
      E.code() != ErrorCode::ModelFailure)
    fuzz::die("unexpected error code", E);
  return 0;
}

//===- fuzz_frames.cpp - Fuzz reading extended-mode reply frames ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The bytes a model side sends, read as PipeModelRunner reads them through
// fifo::Reader on a real pipe. An input starting with '{' starts with a
// handshake reply line (fifo::Reader::readLine, parseHandshakeReply); then
// come reply frames: readReplyFrame (pipe/Replies.h: FrameHeader::read, the
// length and kind checks) until the first error; each RESULT payload is decoded
// by all three codecs against the output of tests/golden/frames.json (`y`,
// float [1]). The message limit is small so that the reader's buffer compaction
// and the TooLarge path are reached.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "pipe/Fifo.h"
#include "pipe/Replies.h"

#include <chrono>

using namespace mlbridge;

namespace {
constexpr size_t MaxMessageBytes = 4096;

TensorBuffers &outputs() {
  static TensorBuffers Outputs = [] {
    auto B = TensorBuffers::create({TensorSpec::of<float>("y", {1})}, "fuzz");
    if (!B)
      fuzz::die("bad output schema", B.takeError());
    return std::move(*B);
  }();
  return Outputs;
}

/// The pipe holds every byte and then EOF: reading it never times out.
int checkNotTimeout(const Error &E) {
  if (E.code() == ErrorCode::Timeout)
    fuzz::die("a filled pipe timed out", E);
  return 0;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  fuzz::FilledPipe Pipe(fuzz::asView(Data, Size));
  fifo::Reader Reader(Pipe.fd(), MaxMessageBytes + FrameHeader::Size);
  auto Until = fifo::Clock::now() + std::chrono::seconds(10);
  if (Size && Data[0] == '{') {
    auto Line = Reader.readLine(MaxHandshakeLine, Until, "fuzzing");
    if (!Line)
      return checkNotTimeout(Line.takeError());
    if (parseHandshakeReply(*Line))
      return 0;
  }
  while (true) {
    auto Frame = readReplyFrame(Reader, MaxMessageBytes, Until);
    if (!Frame)
      return checkNotTimeout(Frame.takeError());
    if (Frame->Kind != FrameKind::Result)
      continue;
    for (Format F : {Format::Bitstream, Format::Json, Format::Protobuf})
      (void)getCodec(F).decode(Frame->Payload, outputs());
  }
}

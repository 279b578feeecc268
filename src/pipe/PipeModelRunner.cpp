//===- pipe/PipeModelRunner.cpp - Runner over two FIFOs -------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include "pipe/Fifo.h"
#include "pipe/FrameHeader.h"
#include "pipe/Replies.h"
#include "support/Json.h"

#include <cstring>

namespace mlbridge {

struct PipeModelRunner::Connection {
  fifo::FileDescriptor In;
  fifo::WriteEnd Out;
  fifo::Reader Reader;
  Connection(fifo::FileDescriptor In, fifo::WriteEnd Out, size_t Max)
      : In(std::move(In)), Out(std::move(Out)),
        Reader(this->In.get(), Max + FrameHeader::Size) {
    Reader.blockOnceConnected();
  }
};

PipeModelRunner::PipeModelRunner(PipeOptions Options)
    : Options(std::move(Options)) {}

PipeModelRunner::~PipeModelRunner() = default;

Expected<std::unique_ptr<PipeModelRunner>>
PipeModelRunner::create(std::vector<TensorSpec> Inputs,
                        std::vector<TensorSpec> Outputs, PipeOptions Options) {
  if (Options.Protocol == PipeProtocol::Mlgo && Outputs.size() != 1)
    return makeError(ErrorCode::InvalidArgument,
                     "the mlgo pipe protocol carries exactly one output "
                     "(LLVM's advice); got ",
                     std::to_string(Outputs.size()));
  if (Options.MaxMessageBytes == 0 ||
      Options.MaxMessageBytes > (size_t(1) << 32) - 1)
    return makeError(ErrorCode::InvalidArgument,
                     "MaxMessageBytes must be between 1 and 2^32-1");
  std::unique_ptr<PipeModelRunner> R(new PipeModelRunner(std::move(Options)));
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  if (R->Options.ChannelBase.empty()) {
    auto Channel = FifoChannel::create();
    if (!Channel)
      return Channel.takeError();
    R->Options.ChannelBase = Channel->base();
    R->OwnedChannel.emplace(std::move(*Channel));
  }
  R->Message.reserve(R->Inputs.totalBytes() + 64);
  return R;
}

Error PipeModelRunner::fail(Error E) {
  markBroken(E);
  Conn.reset(); // closing our ends tells the model side we are gone
  return E;
}

Error PipeModelRunner::connect() {
  if (brokenBy())
    return brokenBy();
  if (Conn)
    return Error::success();
  auto Until = fifo::Clock::now() + Options.OpenTimeout;
  auto In = fifo::openForRead(Options.ChannelBase + ".in");
  if (!In)
    return fail(In.takeError());
  auto Out = fifo::openForWrite(Options.ChannelBase + ".out", In->get(), Until);
  if (!Out)
    return fail(Out.takeError());
  Conn = std::make_unique<Connection>(std::move(*In), std::move(*Out),
                                      Options.MaxMessageBytes);
  std::string Header;
  if (Options.Protocol == PipeProtocol::Mlgo) {
    Header.append("{\"features\":[");
  } else {
    Header.append("{\"mlbridge\":1,\"format\":\"");
    Header.append(formatName(Options.Serialization));
    Header.append("\",\"features\":[");
  }
  for (size_t I = 0; I < Inputs.size(); ++I) {
    if (I)
      Header.push_back(',');
    Inputs.spec(I).appendJSON(Header);
  }
  if (Options.Protocol == PipeProtocol::Mlgo) {
    Header.append("],\"advice\":");
    Outputs.spec(0).appendJSON(Header);
  } else {
    Header.append("],\"outputs\":[");
    for (size_t I = 0; I < Outputs.size(); ++I) {
      if (I)
        Header.push_back(',');
      Outputs.spec(I).appendJSON(Header);
    }
    Header.push_back(']');
  }
  Header.append("}\n");
  if (Error E = fifo::writeAll(Conn->Out, Header, Until, "sending the header"))
    return fail(E);
  if (Options.Protocol == PipeProtocol::Extended) {
    if (Error E = handshake())
      return fail(E);
  }
  return Error::success();
}

Error PipeModelRunner::handshake() {
  auto Until = fifo::Clock::now() + Options.OpenTimeout;
  auto Line = Conn->Reader.readLine(MaxHandshakeLine, Until,
                                    "waiting for the handshake reply");
  if (!Line)
    return Line.takeError();
  return parseHandshakeReply(*Line);
}

Error PipeModelRunner::switchContext(std::string_view Name) {
  if (Error E = connect())
    return E;
  auto Until = fifo::Clock::now() + Options.IoTimeout;
  Observation = 0;
  if (Options.Protocol == PipeProtocol::Mlgo) {
    Message.assign("{\"context\":");
    json::appendString(Message, Name);
    Message.append("}\n");
    if (Error E =
            fifo::writeAll(Conn->Out, Message, Until, "sending a context"))
      return fail(E);
    return Error::success();
  }
  if (Name.size() > Options.MaxMessageBytes)
    return makeError(ErrorCode::TooLarge, "context name too long");
  char Header[FrameHeader::Size];
  FrameHeader::write(Header, uint32_t(Name.size()), FrameKind::Context);
  struct iovec Parts[2] = {{Header, sizeof(Header)},
                           {const_cast<char *>(Name.data()), Name.size()}};
  if (Error E = fifo::writeAll(Conn->Out, Parts, 2, Until, "sending a context"))
    return fail(E);
  return Error::success();
}

Error PipeModelRunner::evaluateImpl() {
  if (Error E = connect())
    return E;
  Error E = Options.Protocol == PipeProtocol::Mlgo ? evaluateMlgo()
                                                   : evaluateExtended();
  if (!E)
    ++Evaluations;
  return E;
}

Error PipeModelRunner::evaluateMlgo() {
  auto Until = fifo::Clock::now() + Options.IoTimeout;
  Message.assign("{\"observation\":");
  json::appendUInt(Message, Observation++);
  Message.append("}\n");
  for (size_t I = 0; I < Inputs.size(); ++I)
    Message.append(static_cast<const char *>(Inputs.data(I)),
                   Inputs.spec(I).byteSize());
  Message.push_back('\n');
  if (Error E =
          fifo::writeAll(Conn->Out, Message, Until, "sending an observation"))
    return fail(E);
  size_t N = Outputs.spec(0).byteSize();
  auto Reply = Conn->Reader.readExact(N, Until, "waiting for the advice");
  if (!Reply)
    return fail(Reply.takeError());
  std::memcpy(Outputs.data(0), Reply->data(), N);
  if (size_t Extra = Conn->Reader.pending())
    return fail(
        makeError(ErrorCode::Protocol, "the model side sent ",
                  std::to_string(Extra), " bytes more than the advice '",
                  Outputs.spec(0).name(), "' (", std::to_string(N), " bytes)"));
  return Error::success();
}

Error PipeModelRunner::evaluateExtended() {
  auto Until = fifo::Clock::now() + Options.IoTimeout;
  const Codec &C = getCodec(Options.Serialization);
  if (Error E = C.encode(Observation++, Inputs, Message))
    return E;
  if (Message.size() > Options.MaxMessageBytes)
    return makeError(ErrorCode::TooLarge, "observation of ",
                     std::to_string(Message.size()),
                     " bytes exceeds MaxMessageBytes");
  char Header[FrameHeader::Size];
  FrameHeader::write(Header, uint32_t(Message.size()), FrameKind::Observation);
  struct iovec Parts[2] = {{Header, sizeof(Header)},
                           {&Message[0], Message.size()}};
  if (Error E =
          fifo::writeAll(Conn->Out, Parts, 2, Until, "sending an observation"))
    return fail(E);
  auto Reply = readReplyFrame(Conn->Reader, Options.MaxMessageBytes, Until);
  if (!Reply)
    return fail(Reply.takeError());
  if (Reply->Kind == FrameKind::Error)
    return makeError(ErrorCode::ModelFailure, "model side reported: ",
                     std::string(Reply->Payload.substr(0, 4096)));
  // A reply that fails validation leaves the channel in step: only this call
  // fails.
  return C.decode(Reply->Payload, Outputs);
}

} // namespace mlbridge

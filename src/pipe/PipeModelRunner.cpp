//===- pipe/PipeModelRunner.cpp - Runner over two FIFOs -------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include "pipe/Fifo.h"
#include "pipe/FrameHeader.h"
#include "pipe/Replies.h"
#include "pipe/SharedRegion.h"
#include "pipe/ShmLayout.h"
#include "support/Json.h"

#include <algorithm>
#include <cstring>
#include <sched.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the shm protocol's words are little-endian");

namespace mlbridge {

namespace {
using shm::load;
using shm::store;

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
/// Appends the CPUs this process may run on, as a JSON list.
void appendCpuList(std::string &Out) {
  cpu_set_t Set;
  Out.push_back('[');
  if (sched_getaffinity(0, sizeof(Set), &Set) == 0) {
    bool First = true;
    for (int Cpu = 0; Cpu < CPU_SETSIZE; ++Cpu)
      if (CPU_ISSET(Cpu, &Set)) {
        if (!First)
          Out.push_back(',');
        json::appendUInt(Out, uint64_t(Cpu));
        First = false;
      }
  }
  Out.push_back(']');
}
/// Message area capacity: context names and model-side error messages.
constexpr uint32_t SharedMessageCapacity = 64 * 1024;
} // namespace

/// The shared-memory protocol's state of one connection.
struct SharedSession {
  fifo::SharedRegion Region;
  shm::Layout Layout;
  uint32_t Seq = 0, ContextSeq = 0;
  /// The current busy-wait budget and its ceiling (0: never spin).
  std::chrono::nanoseconds Spin{0}, MaxSpin{0};
  /// Waits the spin did not end since the budget was last restored.
  unsigned Sleeps = 0;
};

struct PipeModelRunner::Connection {
  fifo::FileDescriptor In;
  fifo::WriteEnd Out;
  fifo::Reader Reader;
  std::unique_ptr<SharedSession> Shared;
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
  std::unique_ptr<SharedSession> Shared;
  if (Options.Protocol == PipeProtocol::SharedMemory) {
    // The region exists, header written, before the model side may look.
    auto Layout =
        shm::computeLayout(Inputs, Outputs,
                           uint32_t(std::min<size_t>(Options.MaxMessageBytes,
                                                     SharedMessageCapacity)));
    if (!Layout)
      return fail(Layout.takeError());
    auto Region = fifo::SharedRegion::create(Layout->Total);
    if (!Region)
      return fail(Region.takeError());
    Shared = std::make_unique<SharedSession>();
    Shared->Region = std::move(*Region);
    Shared->Layout = std::move(*Layout);
    shm::writeHeader(Shared->Region.data(), Shared->Layout);
  }
  auto In = fifo::openForRead(Options.ChannelBase + ".in");
  if (!In)
    return fail(In.takeError());
  auto Out = fifo::openForWrite(Options.ChannelBase + ".out", In->get(), Until);
  if (!Out)
    return fail(Out.takeError());
  Conn = std::make_unique<Connection>(std::move(*In), std::move(*Out),
                                      Options.MaxMessageBytes);
  Conn->Shared = std::move(Shared);
  std::string Header;
  if (Options.Protocol == PipeProtocol::Mlgo) {
    Header.append("{\"features\":[");
  } else {
    Header.append("{\"mlbridge\":1,\"format\":\"");
    Header.append(Conn->Shared ? "shm" : formatName(Options.Serialization));
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
  if (Conn->Shared) {
    // The model side opens the region as /proc/PID/fd/FD.
    Header.append(",\"cpus\":");
    appendCpuList(Header);
    Header.append(",\"shm\":{\"pid\":");
    json::appendUInt(Header, uint64_t(::getpid()));
    Header.append(",\"fd\":");
    json::appendUInt(Header, uint64_t(Conn->Shared->Region.fd()));
    Header.push_back('}');
  }
  Header.append("}\n");
  if (Error E = fifo::writeAll(Conn->Out, Header, Until, "sending the header"))
    return fail(E);
  if (Options.Protocol != PipeProtocol::Mlgo) {
    if (Error E = handshake())
      return fail(E);
  }
  if (SharedSession *S = Conn->Shared.get()) {
    // The model side, knowing both CPU sets, said whether spinning can pay.
    if (load(S->Region.data(), shm::SpinAllowed) == 1)
      S->MaxSpin = Options.SpinMicros;
    S->Spin = S->MaxSpin;
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
  if (SharedSession *S = Conn->Shared.get()) {
    // Delivered with the next request (which publishes it).
    if (Name.size() > S->Layout.MessageCapacity)
      return makeError(ErrorCode::TooLarge, "context name of ",
                       std::to_string(Name.size()),
                       " bytes exceeds the shared message area (",
                       std::to_string(S->Layout.MessageCapacity), " bytes)");
    uint8_t *B = S->Region.data();
    if (!Name.empty())
      std::memcpy(B + S->Layout.MessageOffset, Name.data(), Name.size());
    store(B, shm::ContextLength, uint32_t(Name.size()), __ATOMIC_RELAXED);
    store(B, shm::ContextSeq, ++S->ContextSeq, __ATOMIC_RELAXED);
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
  Error E = Options.Protocol == PipeProtocol::Mlgo       ? evaluateMlgo()
            : Options.Protocol == PipeProtocol::Extended ? evaluateExtended()
                                                         : evaluateShared();
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

Error PipeModelRunner::evaluateShared() {
  auto Until = fifo::Clock::now() + Options.IoTimeout;
  SharedSession &S = *Conn->Shared;
  uint8_t *B = S.Region.data();
  for (size_t I = 0; I < Inputs.size(); ++I)
    std::memcpy(B + S.Layout.InputOffsets[I], Inputs.data(I),
                Inputs.spec(I).byteSize());
  const uint32_t Seq = ++S.Seq;
  ++Observation;
  // Publish the request, then ring if the model side sleeps. Both sides
  // store "I wait" before checking the other's word (sequentially
  // consistent), so one of them always sees the other: no wake-up is lost.
  store(B, shm::RequestSeq, Seq, __ATOMIC_SEQ_CST);
  if (load(B, shm::ModelWaiting, __ATOMIC_SEQ_CST)) {
    ssize_t N = ::write(Conn->Out.Write.get(), "", 1);
    (void)N; // a full FIFO (EAGAIN) holds rings enough
  }
  bool Spun = false;
  if (S.Spin.count() > 0) {
    auto SpinUntil = std::min(fifo::Clock::now() + S.Spin, Until);
    for (unsigned I = 1;; ++I) {
      if (load(B, shm::ReplySeq) == Seq) {
        Spun = true;
        break;
      }
      cpuRelax();
      if (I % 64 == 0 && fifo::Clock::now() >= SpinUntil)
        break;
    }
  }
  if (!Spun) {
    while (true) {
      store(B, shm::CompilerWaiting, 1, __ATOMIC_SEQ_CST);
      if (load(B, shm::ReplySeq, __ATOMIC_SEQ_CST) == Seq)
        break;
      // Sleep until a ring; EOF (the model side died) and the deadline end
      // the call. A ring may be stale: check again.
      auto Ring = Conn->Reader.readExact(1, Until, "waiting for the reply");
      if (!Ring)
        return fail(Ring.takeError());
      Conn->Reader.discard();
    }
    store(B, shm::CompilerWaiting, 0, __ATOMIC_RELAXED);
    // Spinning did not pay: spin half as long next time, and try the full
    // budget again after 256 such calls (the model side may have moved).
    S.Spin /= 2;
    if (S.Spin < std::chrono::microseconds(1))
      S.Spin = std::chrono::nanoseconds(0);
    if (++S.Sleeps % 256 == 0)
      S.Spin = S.MaxSpin;
  }
  Error Why;
  switch (shm::readReply(B, S.Layout, Outputs, Why)) {
  case shm::ReplyKind::Result:
    return Error::success();
  case shm::ReplyKind::ModelError: // this call only
    return Why;
  case shm::ReplyKind::Malformed:
    break;
  }
  return fail(std::move(Why));
}

} // namespace mlbridge

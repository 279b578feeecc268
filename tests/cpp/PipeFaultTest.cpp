//===- PipeFaultTest.cpp - Dead, stalled and lying peers ------------------===//
//
// Each fault must give a clear error of the right kind: no hang (ctest's
// per-test timeout would catch one; the error kind shows whether the runner
// waited for its deadline or noticed the fault at once), no crash, no SIGPIPE
// death, no leak (LeakSanitizer checks the last). No wall-time assertions.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include "TestHelpers.h"
#include "pipe/FrameHeader.h"

#include <fcntl.h>
#include <functional>
#include <thread>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {
struct FaultResult {
  Error E;
  Error Next; // a second call after the fault
};

/// Runs one evaluate() against a host thread running \p HostScript.
FaultResult runAgainst(PipeProtocol P,
                       std::function<void(RawHost &)> HostScript,
                       std::chrono::milliseconds IoTimeout = 2000ms) {
  PipeOptions O;
  O.Protocol = P;
  O.Serialization = Format::Protobuf;
  O.OpenTimeout = 5s;
  O.IoTimeout = IoTimeout;
  O.MaxMessageBytes = 1 << 20;
  auto R = PipeModelRunner::create({TensorSpec::of<int64_t>("a", {4})},
                                   {TensorSpec::of<int64_t>("advice")}, O);
  EXPECT_TRUE(bool(R));
  std::string Base = (*R)->channelBase();
  std::thread Host([&] {
    RawHost H;
    if (H.open(Base))
      HostScript(H);
  });
  Error E = (*R)->evaluate();
  Error Next = (*R)->evaluate();
  R->reset(); // closes our ends: the host thread sees EOF
  Host.join();
  return {E, Next};
}

void readHeaderAndObservation(RawHost &H, PipeProtocol P) {
  std::string Line, Bytes;
  H.readLine(Line);
  if (P == PipeProtocol::Extended) {
    H.write("{\"mlbridge\":1}\n");
    H.readExact(FrameHeader::Size, Bytes);
    H.readExact(FrameHeader::read(Bytes.data()).Length, Bytes);
  } else {
    H.readLine(Line);
    H.readExact(33, Bytes);
  }
}

void expectFault(const FaultResult &F, ErrorCode Code,
                 const std::string &Mentions) {
  ASSERT_TRUE(bool(F.E)) << "no error";
  EXPECT_EQ(F.E.code(), Code) << F.E.toString();
  EXPECT_NE(F.E.message().find(Mentions), std::string::npos) << F.E.toString();
}
} // namespace

TEST(PipeFault, PeerNeverOpens) {
  PipeOptions O;
  O.OpenTimeout = 300ms;
  ASSERT_EXPECTED(R,
                  PipeModelRunner::create({TensorSpec::of<int64_t>("a")},
                                          {TensorSpec::of<int64_t>("b")}, O));
  Error E = (*R)->evaluate<int64_t>().takeError();
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::Timeout) << E.toString();
  EXPECT_NE(E.message().find("did not open"), std::string::npos);
  // Later calls fail with the original cause and do not retry the open.
  Error Again = (*R)->evaluate();
  EXPECT_EQ(Again.code(), ErrorCode::Broken);
  EXPECT_NE(Again.message().find("did not open"), std::string::npos);
}

TEST(PipeFault, PeerDiesMidCall) {
  for (PipeProtocol P : {PipeProtocol::Mlgo, PipeProtocol::Extended}) {
    auto F = runAgainst(P, [P](RawHost &H) {
      readHeaderAndObservation(H, P);
      H.close(); // the model process died before answering
    });
    expectFault(F, ErrorCode::PeerClosed, "EOF");
    EXPECT_EQ(F.Next.code(), ErrorCode::Broken);
  }
}

TEST(PipeFault, PeerClosesBeforeReadingIsEpipeNotSigpipe) {
  auto F = runAgainst(PipeProtocol::Mlgo, [](RawHost &H) {
    std::string Line;
    H.readLine(Line); // the header, then the model process dies
    H.close();
  });
  ASSERT_TRUE(bool(F.E));
  // Either the header write hits EPIPE or the read hits EOF; never a signal.
  EXPECT_TRUE(F.E.code() == ErrorCode::PeerClosed) << F.E.toString();
}

TEST(PipeFault, PeerDiesWhileAnObservationWaitsForRoom) {
  // 512 KiB does not fit in the FIFO: the write waits for room, and must
  // notice that the peer is gone (no Timeout, no SIGPIPE: the runner keeps
  // a reader of its own on the FIFO, so the write never sees EPIPE).
  for (PipeProtocol P : {PipeProtocol::Mlgo, PipeProtocol::Extended}) {
    PipeOptions O;
    O.Protocol = P;
    O.OpenTimeout = 5s;
    O.IoTimeout = 60s;
    O.MaxMessageBytes = 1 << 21;
    ASSERT_EXPECTED(
        R, PipeModelRunner::create({TensorSpec::of<int64_t>("a", {1 << 16})},
                                   {TensorSpec::of<int64_t>("advice")}, O));
    std::string Base = (*R)->channelBase();
    std::thread Host([&] {
      RawHost H;
      std::string Line;
      if (!H.open(Base) || !H.readLine(Line))
        return;
      if (P == PipeProtocol::Extended)
        H.write("{\"mlbridge\":1}\n");
      H.close(); // dies without reading the observation
    });
    Error E = (*R)->evaluate();
    Host.join();
    ASSERT_TRUE(bool(E));
    EXPECT_EQ(E.code(), ErrorCode::PeerClosed) << E.toString();
    EXPECT_NE(E.message().find("sending an observation"), std::string::npos)
        << E.toString();
  }
}

TEST(PipeFault, TruncatedReplyThenDeath) {
  auto F = runAgainst(PipeProtocol::Mlgo, [](RawHost &H) {
    readHeaderAndObservation(H, PipeProtocol::Mlgo);
    H.write(std::string(4, '\0'));
    H.close();
  });
  expectFault(F, ErrorCode::PeerClosed, "got 4 of 8 bytes");
}

TEST(PipeFault, StalledPeerTimesOut) {
  for (PipeProtocol P : {PipeProtocol::Mlgo, PipeProtocol::Extended}) {
    auto F = runAgainst(
        P,
        [P](RawHost &H) {
          readHeaderAndObservation(H, P);
          H.write(std::string(3, '\0'));
          std::string Line;
          H.readLine(Line); // stall until the runner goes away
        },
        300ms);
    expectFault(F, ErrorCode::Timeout, "timed out");
  }
}

namespace {
/// An mlgo runner sending one int64 tensor of 4, answered by one int64.
Expected<std::unique_ptr<PipeModelRunner>>
mlgoRunner(std::chrono::milliseconds IoTimeout) {
  PipeOptions O;
  O.OpenTimeout = 5s;
  O.IoTimeout = IoTimeout;
  return PipeModelRunner::create({TensorSpec::of<int64_t>("a", {4})},
                                 {TensorSpec::of<int64_t>("advice")}, O);
}

/// Answers mlgo observations of one int64 tensor of 4 (33 bytes after the
/// line) with their number, the k-th after \p Delay(k), until EOF; stalls
/// (until EOF) instead of answering observation \p StallAt.
void answerMlgoCalls(RawHost &H,
                     const std::function<std::chrono::microseconds(int)> &Delay,
                     int StallAt = -1) {
  std::string Line, Bytes;
  H.readLine(Line); // the header
  for (int K = 0; H.readLine(Line) && H.readExact(33, Bytes); ++K) {
    if (K == StallAt) {
      H.readLine(Line); // until the runner goes away
      return;
    }
    std::this_thread::sleep_for(Delay(K));
    int64_t Advice = K;
    if (!H.write(std::string(reinterpret_cast<char *>(&Advice), 8)))
      return;
  }
}

} // namespace

TEST(PipeFault, StalledPeerTimesOutInTheSteadyState) {
  // The first replies switch the runner to blocking reads with a watchdog;
  // a stall after 200 calls must still end in a Timeout, and the runner
  // must then be broken (the watchdog's byte is in the FIFO).
  ASSERT_EXPECTED(R, mlgoRunner(300ms));
  std::string Base = (*R)->channelBase();
  std::thread Host([&] {
    RawHost H;
    if (H.open(Base))
      answerMlgoCalls(H, [](int) { return 0us; }, 200);
  });
  for (int K = 0; K < 200; ++K) {
    auto A = (*R)->evaluate<int64_t>();
    ASSERT_TRUE(bool(A)) << A.error().toString();
    ASSERT_EQ(*A, K);
  }
  Error E = (*R)->evaluate();
  expectFault({E, Error::success()}, ErrorCode::Timeout, "timed out");
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
  R->reset(); // the stalled host sees EOF
  Host.join();
}

TEST(PipeFault, RepliesRacingTheDeadlineAreAnswersOrTimeouts) {
  // Replies come later and later around a 2 ms deadline: every call either
  // gets its own answer or times out (then the runner is broken). Never a
  // wrong answer or a protocol error from a byte the watchdog wrote.
  for (int Trial = 0; Trial < 5; ++Trial) {
    ASSERT_EXPECTED(R, mlgoRunner(2ms));
    std::string Base = (*R)->channelBase();
    std::thread Host([&] {
      RawHost H;
      if (H.open(Base))
        answerMlgoCalls(H, [Trial](int K) {
          return std::chrono::microseconds(K * (10 + Trial * 7));
        });
    });
    int K = 0;
    Error E;
    for (;; ++K) {
      auto A = (*R)->evaluate<int64_t>();
      if (!A) {
        E = A.takeError();
        break;
      }
      ASSERT_EQ(*A, K) << "a wrong answer at call " << K;
    }
    EXPECT_EQ(E.code(), ErrorCode::Timeout)
        << "call " << K << ": " << E.toString();
    EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
    R->reset(); // the host sees EOF at its next read
    Host.join();
  }
}

TEST(PipeFault, WrongReplySizeInMlgoMode) {
  auto F = runAgainst(PipeProtocol::Mlgo, [](RawHost &H) {
    readHeaderAndObservation(H, PipeProtocol::Mlgo);
    H.write(std::string(16, '\1'));
    std::string Line;
    H.readLine(Line);
  });
  expectFault(F, ErrorCode::Protocol, "8 bytes more than the advice");
}

TEST(PipeFault, OversizedLengthIsRejectedWithoutAllocating) {
  auto F = runAgainst(PipeProtocol::Extended, [](RawHost &H) {
    readHeaderAndObservation(H, PipeProtocol::Extended);
    char Head[FrameHeader::Size];
    FrameHeader::write(Head, 0xFFFFFFF0u, FrameKind::Result);
    H.write(std::string(Head, sizeof(Head)));
    std::string Line;
    H.readLine(Line);
  });
  expectFault(F, ErrorCode::TooLarge, "exceeds the limit");
}

TEST(PipeFault, GarbageBytesAreAProtocolError) {
  auto F = runAgainst(PipeProtocol::Extended, [](RawHost &H) {
    readHeaderAndObservation(H, PipeProtocol::Extended);
    H.write(std::string("\x10\x00\x00\x00garbage!garbage!xxxxxxxx", 28));
    std::string Line;
    H.readLine(Line);
  });
  expectFault(F, ErrorCode::Protocol, "unexpected frame kind");
}

TEST(PipeFault, MalformedReplyPayloadFailsOnlyThatCall) {
  int Calls = 0;
  auto F = runAgainst(PipeProtocol::Extended, [&Calls](RawHost &H) {
    readHeaderAndObservation(H, PipeProtocol::Extended);
    char Head[FrameHeader::Size];
    // A protobuf reply whose tensor claims 2^35 bytes.
    std::string Bad("\x12\x80\x80\x80\x80\x80\x01", 7);
    FrameHeader::write(Head, uint32_t(Bad.size()), FrameKind::Result);
    H.write(std::string(Head, sizeof(Head)) + Bad);
    ++Calls;
    // Second call: a valid reply (advice = 7).
    std::string Bytes;
    H.readExact(FrameHeader::Size, Bytes);
    H.readExact(FrameHeader::read(Bytes.data()).Length, Bytes);
    std::string Good("\x12\x17\x0a\x06"
                     "advice\x10\x09\x1a\x01\x01\x22\x08\x07\0\0\0\0\0\0\0",
                     25);
    FrameHeader::write(Head, uint32_t(Good.size()), FrameKind::Result);
    H.write(std::string(Head, sizeof(Head)) + Good);
    ++Calls;
    std::string Line;
    H.readLine(Line);
  });
  expectFault(F, ErrorCode::Protocol, "malformed protobuf");
  EXPECT_FALSE(F.Next) << F.Next.toString();
  EXPECT_EQ(Calls, 2);
}

TEST(PipeFault, NotAFifo) {
  std::string Base = ::testing::TempDir() + "/mlbridge_not_fifo";
  int FD = ::open((Base + ".in").c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(FD, 0);
  ::close(FD);
  PipeOptions O;
  O.ChannelBase = Base;
  ASSERT_EXPECTED(R,
                  PipeModelRunner::create({TensorSpec::of<int64_t>("a")},
                                          {TensorSpec::of<int64_t>("b")}, O));
  Error E = (*R)->connect();
  EXPECT_EQ(E.code(), ErrorCode::InvalidArgument) << E.toString();
  ::unlink((Base + ".in").c_str());
}

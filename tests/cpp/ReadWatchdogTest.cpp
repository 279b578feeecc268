//===- ReadWatchdogTest.cpp - Deadlines for blocking FIFO reads -----------===//
//
// A blocked read() must come back when its deadline passes, and only then:
// a read that ends in time is never interrupted (no foreign byte in the
// FIFO), an earlier deadline wakes a watchdog asleep until a later one, and
// the watchdog stops at once when destroyed. A watchdog that fails any of
// these hangs the test: ctest's per-test timeout catches that. No wall-time
// assertions.
//
//===----------------------------------------------------------------------===//

#include "pipe/ReadWatchdog.h"
#include "mlbridge/FifoChannel.h"

#include "TestHelpers.h"

#include <fcntl.h>
#include <thread>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::fifo;
using namespace std::chrono_literals;

namespace {
using Clock = std::chrono::steady_clock;

/// A FIFO with a blocking read end and a writer that writes only when told.
struct BlockingFifo {
  FifoChannel Channel;
  int Read = -1, Write = -1;
  explicit BlockingFifo(FifoChannel C) : Channel(std::move(C)) {
    Read = ::open(Channel.inPath().c_str(), O_RDONLY | O_NONBLOCK);
    Write = ::open(Channel.inPath().c_str(), O_WRONLY | O_NONBLOCK);
    if (Read >= 0)
      ::fcntl(Read, F_SETFL, ::fcntl(Read, F_GETFL) & ~O_NONBLOCK);
  }
  ~BlockingFifo() {
    if (Read >= 0)
      ::close(Read);
    if (Write >= 0)
      ::close(Write);
  }
  /// Bytes waiting in the FIFO (read without blocking).
  std::string drain() {
    ::fcntl(Read, F_SETFL, ::fcntl(Read, F_GETFL) | O_NONBLOCK);
    std::string Got;
    char Buf[64];
    ssize_t N;
    while ((N = ::read(Read, Buf, sizeof(Buf))) > 0)
      Got.append(Buf, size_t(N));
    return Got;
  }
};

std::unique_ptr<BlockingFifo> makeFifo() {
  auto C = FifoChannel::create();
  EXPECT_TRUE(bool(C)) << C.error().toString();
  auto F = std::make_unique<BlockingFifo>(std::move(*C));
  EXPECT_GE(F->Read, 0);
  EXPECT_GE(F->Write, 0);
  return F;
}
} // namespace

TEST(ReadWatchdog, InterruptsABlockedReadAtItsDeadline) {
  auto F = makeFifo();
  ASSERT_EXPECTED(W, ReadWatchdog::create(F->Read));
  (*W)->arm(Clock::now() + 50ms);
  char Byte = 'x';
  ssize_t N = ::read(F->Read, &Byte, 1); // nobody writes: blocks
  EXPECT_TRUE((*W)->disarm()) << "the read ended without the watchdog";
  EXPECT_EQ(N, 1);
  // The next read is watched again, and interrupted again.
  (*W)->arm(Clock::now() + 10ms);
  N = ::read(F->Read, &Byte, 1);
  EXPECT_TRUE((*W)->disarm());
  EXPECT_EQ(N, 1);
}

TEST(ReadWatchdog, AReadThatEndsInTimeIsNotInterrupted) {
  auto F = makeFifo();
  ASSERT_EXPECTED(W, ReadWatchdog::create(F->Read));
  std::thread Peer([&] {
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(::write(F->Write, "p", 1), 1);
  });
  (*W)->arm(Clock::now() + 60s);
  char Byte = 0;
  ssize_t N = ::read(F->Read, &Byte, 1);
  EXPECT_FALSE((*W)->disarm());
  Peer.join();
  EXPECT_EQ(N, 1);
  EXPECT_EQ(Byte, 'p');
  // Many short watches that all end in time: the thread never fires.
  for (int I = 0; I < 100000; ++I) {
    (*W)->arm(Clock::now() + 1s);
    ASSERT_FALSE((*W)->disarm()) << "fired at watch " << I;
  }
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(F->drain(), "") << "a foreign byte reached the FIFO";
}

TEST(ReadWatchdog, AnEarlierDeadlineWakesAWatchdogAsleepUntilALaterOne) {
  auto F = makeFifo();
  ASSERT_EXPECTED(W, ReadWatchdog::create(F->Read));
  (*W)->arm(Clock::now() + 3600s); // the thread goes to sleep for an hour
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE((*W)->disarm());
  (*W)->arm(Clock::now() + 30ms);
  char Byte;
  ssize_t N = ::read(F->Read, &Byte, 1); // hangs if the thread stays asleep
  EXPECT_TRUE((*W)->disarm());
  EXPECT_EQ(N, 1);
}

TEST(ReadWatchdog, StopsAtOnceWhenDestroyed) {
  auto F = makeFifo();
  {
    ASSERT_EXPECTED(W, ReadWatchdog::create(F->Read));
    (*W)->arm(Clock::now() + 3600s);
    std::this_thread::sleep_for(10ms);
    EXPECT_FALSE((*W)->disarm());
  } // joins the thread: hangs if it sleeps through the stop
  {
    ASSERT_EXPECTED(W, ReadWatchdog::create(F->Read)); // never armed
  }
  EXPECT_EQ(F->drain(), "");
}

TEST(ReadWatchdog, RefusesADescriptorThatIsNoFifoEnd) {
  auto W = ReadWatchdog::create(1 << 20); // no such descriptor
  ASSERT_FALSE(bool(W));
  EXPECT_EQ(W.error().code(), ErrorCode::IO) << W.error().toString();
  EXPECT_NE(W.error().message().find("/proc/self/fd"), std::string::npos);
}

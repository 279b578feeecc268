//===- pipe/ReadWatchdog.cpp - Deadlines for blocking FIFO reads ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "pipe/ReadWatchdog.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <string>
#include <system_error>
#include <unistd.h>

namespace mlbridge {
namespace fifo {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int64_t Never = INT64_MAX;

int64_t toNanos(ReadWatchdog::Deadline T) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             T.time_since_epoch())
      .count();
}

ReadWatchdog::Deadline fromNanos(int64_t N) {
  return ReadWatchdog::Deadline(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(N)));
}

/// Opens a new write end of the FIFO whose read end is \p FD, or -1.
int openWriteEnd(int FD) {
  char Path[40];
  std::snprintf(Path, sizeof(Path), "/proc/self/fd/%d", FD);
  return ::open(Path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
}
} // namespace

/// Longest create() waits for its thread to start.
constexpr std::chrono::milliseconds StartTimeout{10000};

ReadWatchdog::ReadWatchdog(int FD) : FD(FD) {}

Expected<std::unique_ptr<ReadWatchdog>> ReadWatchdog::create(int FD) {
  // The interrupt must be possible before any read relies on it.
  int Probe = openWriteEnd(FD);
  if (Probe < 0)
    return makeError(ErrorCode::IO, "cannot open a write end of FIFO ",
                     std::to_string(FD),
                     " through /proc/self/fd: ", std::strerror(errno));
  ::close(Probe);
  std::unique_ptr<ReadWatchdog> W(new ReadWatchdog(FD));
  // The thread starts with every signal blocked: signals sent to the
  // process (a Ctrl-C to the compiler) go to the compiler's own threads.
  sigset_t All, Old;
  sigfillset(&All);
  pthread_sigmask(SIG_SETMASK, &All, &Old);
  std::string Failure;
  try {
    W->Thread = std::thread([P = W.get()] { P->run(); });
  } catch (const std::system_error &E) {
    Failure = E.what();
  }
  pthread_sigmask(SIG_SETMASK, &Old, nullptr);
  if (!Failure.empty())
    return makeError(ErrorCode::IO,
                     "cannot start the read watchdog: ", Failure);
  // Wait until the thread has started and is parked: a thread still
  // starting may hold the allocator's lock, and a child the compiler forks
  // then (the phase service's worker) would deadlock on it. The thread
  // releases Lock only inside its wait.
  bool Started;
  {
    std::unique_lock<std::mutex> L(W->Lock);
    Started = W->Wake.wait_for(L, StartTimeout, [&] { return W->Running; });
  }
  if (!Started) // W's destructor stops and joins the thread
    return makeError(ErrorCode::Timeout,
                     "the read watchdog did not start within ",
                     std::to_string(StartTimeout.count()), " ms");
  return W;
}

ReadWatchdog::~ReadWatchdog() {
  {
    std::lock_guard<std::mutex> G(Lock);
    Stop = true;
  }
  Wake.notify_all();
  if (Thread.joinable())
    Thread.join();
}

void ReadWatchdog::arm(Deadline Until) {
  int64_t D = std::max<int64_t>(toNanos(Until), 1);
  Armed.store(D);
  // Sequentially consistent with the thread's store of WakesAt before it
  // checks Armed: either it sees this deadline, or this sees it asleep.
  if (D < WakesAt.load()) {
    std::lock_guard<std::mutex> G(Lock);
    Wake.notify_one();
  }
}

void ReadWatchdog::run() {
  std::unique_lock<std::mutex> L(Lock);
  Running = true;
  Wake.notify_all();
  while (!Stop) {
    int64_t D = Armed.load();
    if (D <= 0) { // idle, or fired: nothing to watch until the next arm()
      WakesAt.store(Never);
      Wake.wait(L, [&] { return Stop || Armed.load() > 0; });
      continue;
    }
    Deadline When = fromNanos(D);
    if (Clock::now() < When) {
      WakesAt.store(D);
      Wake.wait_until(L, When, [&] {
        int64_t A = Armed.load();
        return Stop || (A > 0 && A < D);
      });
      continue;
    }
    if (!Armed.compare_exchange_strong(D, Fired))
      continue; // that read ended (another may have started)
    // The read armed with D still waits: wake it. Retry while no write end
    // can be opened (out of descriptors) and the read still waits.
    while (!interrupt() && !Stop && Armed.load() == Fired)
      Wake.wait_for(L, std::chrono::milliseconds(10));
  }
}

bool ReadWatchdog::interrupt() const {
  int W = openWriteEnd(FD);
  if (W < 0)
    return false;
  // One byte wakes the read; a full FIFO (EAGAIN) has data for it already.
  ssize_t N;
  do
    N = ::write(W, "", 1);
  while (N < 0 && errno == EINTR);
  ::close(W);
  return N == 1 || errno == EAGAIN;
}

} // namespace fifo
} // namespace mlbridge

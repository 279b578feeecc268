//===- pipe/ReadWatchdog.h - Deadlines for blocking FIFO reads --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: keeps the deadline of a blocking read() on a FIFO without a
/// system call per read. poll() with a timeout before every read costs a
/// system call and a kernel timer per call (~0.9 us of a ~7 us round trip
/// on one vCPU); a blocking read costs neither, but cannot time out.
///
/// A watchdog thread does the timing instead. The reading thread arms it
/// with the read's deadline (an atomic store) and disarms it after the read
/// (an atomic exchange). The thread sleeps until the armed deadline; when it
/// finds the same read still armed past its deadline, it interrupts the read
/// by writing one byte into the FIFO through a write end it opens for that
/// moment only (/proc/self/fd/N: holding one would hide the peer's EOF). The
/// interrupted read then reports a timeout, and the stream is lost (a byte
/// that is not the peer's is in it): the caller must stop using the FIFO,
/// as the pipe runner does after any timeout.
///
/// The reader wakes the thread only when it has nothing to watch (or sleeps
/// until a later deadline than the one armed), so a busy reader pays no
/// wake-up: at most one per deadline period.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_READWATCHDOG_H
#define MLBRIDGE_PIPE_READWATCHDOG_H

#include "mlbridge/Error.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace mlbridge {
namespace fifo {

/// Interrupts blocking reads on one FIFO read end when their deadline passes.
class ReadWatchdog {
public:
  /// Deadlines are points on the steady clock.
  using Deadline = std::chrono::steady_clock::time_point;

  /// Starts a watchdog for reads on the FIFO read end \p FD (not owned; it
  /// must outlive the watchdog). Fails when a write end of the FIFO cannot
  /// be opened through /proc/self/fd (then reads must poll instead).
  static Expected<std::unique_ptr<ReadWatchdog>> create(int FD);

  /// Stops and joins the thread.
  ~ReadWatchdog();
  ReadWatchdog(const ReadWatchdog &) = delete;
  ReadWatchdog &operator=(const ReadWatchdog &) = delete;

  /// Starts watching a read that must end by \p Until.
  void arm(Deadline Until);

  /// Stops watching the current read; true when its deadline passed and it
  /// was (or is being) interrupted: the FIFO's stream is then lost.
  bool disarm() { return Armed.exchange(Idle) == Fired; }

private:
  explicit ReadWatchdog(int FD);
  void run();
  /// Writes one byte into the FIFO; false when no write end could be opened.
  bool interrupt() const;

  /// Armed holds the deadline in steady-clock nanoseconds, or one of these.
  static constexpr int64_t Idle = 0, Fired = -1;

  const int FD;
  std::atomic<int64_t> Armed{Idle};
  /// The deadline (nanoseconds) the thread sleeps until, INT64_MAX while it
  /// waits with nothing to watch: arm() wakes it for an earlier deadline.
  std::atomic<int64_t> WakesAt{INT64_MAX};
  std::mutex Lock;
  std::condition_variable Wake;
  bool Stop = false; // guarded by Lock
  /// Set by the thread once it runs (guarded by Lock): create() returns
  /// only when the thread has started and waits, so that it holds no lock
  /// of the process (the allocator's included) when the compiler forks.
  bool Running = false;
  std::thread Thread;
};

} // namespace fifo
} // namespace mlbridge

#endif // MLBRIDGE_PIPE_READWATCHDOG_H

//===- pipe/Fifo.h - FIFO I/O with deadlines --------------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: FIFO endpoints with deadlines. Every blocking wait is bounded
/// by a deadline: a write is tried first and waits in poll() only for room;
/// a read waits in poll() for data, or, once the peer has sent its first
/// bytes, blocks in read() with a ReadWatchdog keeping the deadline (one
/// system call per wait instead of two). EOF is an error. A
/// write end is held together with a read end of the same FIFO (never
/// read), so writing to a peer that died can neither raise SIGPIPE, which
/// would kill the compiler, nor needs a signal mask changed around every
/// write: the peer's death shows on the FIFO it writes to instead.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_FIFO_H
#define MLBRIDGE_PIPE_FIFO_H

#include "mlbridge/Error.h"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <sys/uio.h>

namespace mlbridge {
namespace fifo {

/// Deadlines are points on the steady clock.
using Clock = std::chrono::steady_clock;
/// A point in time after which an operation fails with Timeout.
using Deadline = Clock::time_point;

/// An owned file descriptor, closed on destruction.
class FileDescriptor {
public:
  FileDescriptor() = default;
  /// Takes ownership of \p FD.
  explicit FileDescriptor(int FD) : FD(FD) {}
  ~FileDescriptor() { reset(); }
  FileDescriptor(FileDescriptor &&Other) noexcept : FD(Other.release()) {}
  FileDescriptor &operator=(FileDescriptor &&Other) noexcept;
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;

  /// The descriptor, or -1.
  int get() const { return FD; }
  /// True when a descriptor is held.
  bool valid() const { return FD >= 0; }
  /// Gives up ownership.
  int release() {
    int Old = FD;
    FD = -1;
    return Old;
  }
  /// Closes the descriptor.
  void reset();

private:
  int FD = -1;
};

/// Opens the FIFO \p Path for reading, non-blocking (succeeds at once).
Expected<FileDescriptor> openForRead(const std::string &Path);

/// The write end of a FIFO to a peer, with a read end of the same FIFO held
/// open and never read. While this process holds a reader, a write can
/// neither raise SIGPIPE nor fail with EPIPE; a peer that is gone shows on
/// the FIFO it writes to (PeerOut): POLLHUP while a write waits for room,
/// EOF at the next read.
struct WriteEnd {
  /// The FIFO's write end.
  FileDescriptor Write;
  /// A read end of the same FIFO, never read.
  FileDescriptor Keepalive;
  /// Our read end of the FIFO the peer writes to (not owned), or -1.
  int PeerOut = -1;
};

/// Opens the FIFO \p Path for writing, waiting until a reader has opened it
/// or \p Until passes, then opens the keepalive reader; \p PeerOut is our
/// read end of the peer's FIFO (WriteEnd::PeerOut).
Expected<WriteEnd> openForWrite(const std::string &Path, int PeerOut,
                                Deadline Until);

/// Writes all of \p Parts (gathered) to \p End before \p Until; PeerClosed
/// when the peer is gone while the write waits for room.
Error writeAll(const WriteEnd &End, struct iovec *Parts, int NumParts,
               Deadline Until, const char *What);

/// Writes all of \p Bytes to \p End before \p Until.
Error writeAll(const WriteEnd &End, std::string_view Bytes, Deadline Until,
               const char *What);

class ReadWatchdog;

/// A buffered reader over a FIFO opened non-blocking. Reads greedily, so
/// bytes the peer sent beyond what was asked stay visible through pending().
class Reader {
public:
  /// Reads from \p FD (not owned), buffering at most \p MaxBuffer bytes.
  Reader(int FD, size_t MaxBuffer);
  ~Reader();
  Reader(const Reader &) = delete;
  Reader &operator=(const Reader &) = delete;

  /// From the peer's first bytes on (its write end is then known to be
  /// open, so a 0-byte read is its EOF), reads block in read() and a
  /// ReadWatchdog keeps their deadlines, instead of a poll() before every
  /// read. Where no watchdog can start, reads keep polling. After a Timeout
  /// in that mode the stream is lost (the watchdog wrote into it): the
  /// caller must stop reading, as it must after any error here.
  void blockOnceConnected() { Mode = WaitMode::WillBlock; }

  /// Returns exactly \p N bytes, valid until the next call.
  Expected<std::string_view> readExact(size_t N, Deadline Until,
                                       const char *What);
  /// Returns one line without its '\n', at most \p MaxLength bytes long.
  Expected<std::string_view> readLine(size_t MaxLength, Deadline Until,
                                      const char *What);
  /// Bytes received but not consumed yet.
  size_t pending() const { return End - Begin; }
  /// Drops the bytes received but not consumed.
  void discard() { Begin = End = 0; }

private:
  Error fill(Deadline Until, const char *What, size_t Wanted);
  void compact(size_t Needed);
  /// Switches to blocking reads with a watchdog, or back to polling.
  void startBlocking();

  /// How a read waits for data.
  enum class WaitMode { Poll, WillBlock, Block };
  WaitMode Mode = WaitMode::Poll;
  std::unique_ptr<ReadWatchdog> Watchdog;
  int FD;
  size_t MaxBuffer;
  std::string Buffer;
  size_t Begin = 0, End = 0;
};

/// Milliseconds left until \p Until (0 if passed), capped for poll().
int millisecondsLeft(Deadline Until);

} // namespace fifo
} // namespace mlbridge

#endif // MLBRIDGE_PIPE_FIFO_H

//===- pipe/Fifo.h - FIFO I/O with deadlines --------------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: non-blocking FIFO endpoints with deadlines. Every blocking wait
/// is a poll() bounded by a deadline (a write is tried first and waits only
/// for room; a read waits for data first); EOF is an error. A
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

/// A buffered reader over a non-blocking FIFO. Reads greedily, so bytes the
/// peer sent beyond what was asked stay visible through pending().
class Reader {
public:
  /// Reads from \p FD (not owned), buffering at most \p MaxBuffer bytes.
  Reader(int FD, size_t MaxBuffer);

  /// Returns exactly \p N bytes, valid until the next call.
  Expected<std::string_view> readExact(size_t N, Deadline Until,
                                       const char *What);
  /// Returns one line without its '\n', at most \p MaxLength bytes long.
  Expected<std::string_view> readLine(size_t MaxLength, Deadline Until,
                                      const char *What);
  /// Bytes received but not consumed yet.
  size_t pending() const { return End - Begin; }

private:
  Error fill(Deadline Until, const char *What, size_t Wanted);
  void compact(size_t Needed);

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

//===- pipe/Fifo.cpp - FIFO I/O with deadlines ----------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "pipe/Fifo.h"
#include "pipe/ReadWatchdog.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace mlbridge {
namespace fifo {

namespace {

Error sysError(const char *What, const std::string &Detail) {
  return makeError(ErrorCode::IO, What, ": ", Detail, ": ",
                   std::strerror(errno));
}

Error timeoutError(const char *What) {
  return makeError(ErrorCode::Timeout, "timed out ", What);
}

Error checkIsFifo(int FD, const std::string &Path) {
  struct stat St;
  if (fstat(FD, &St) != 0)
    return sysError("cannot stat", Path);
  if (!S_ISFIFO(St.st_mode))
    return makeError(ErrorCode::InvalidArgument, "'", Path, "' is not a FIFO");
  return Error::success();
}

} // namespace

FileDescriptor &FileDescriptor::operator=(FileDescriptor &&Other) noexcept {
  if (this != &Other) {
    reset();
    FD = Other.release();
  }
  return *this;
}

void FileDescriptor::reset() {
  if (FD >= 0)
    ::close(FD);
  FD = -1;
}

int millisecondsLeft(Deadline Until) {
  auto Left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  Until - Clock::now())
                  .count();
  if (Left <= 0)
    return 0;
  return int(std::min<long long>(Left + 1, 1 << 30));
}

Expected<FileDescriptor> openForRead(const std::string &Path) {
  int FD = ::open(Path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (FD < 0)
    return sysError("cannot open FIFO for reading", Path);
  FileDescriptor Owned(FD);
  if (Error E = checkIsFifo(FD, Path))
    return E;
  return Owned;
}

Expected<WriteEnd> openForWrite(const std::string &Path, int PeerOut,
                                Deadline Until) {
  auto Sleep = std::chrono::microseconds(200);
  WriteEnd End;
  End.PeerOut = PeerOut;
  while (!End.Write.valid()) {
    int FD = ::open(Path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (FD >= 0) {
      End.Write = FileDescriptor(FD);
      if (Error E = checkIsFifo(FD, Path))
        return E;
      break;
    }
    if (errno != ENXIO && errno != EINTR)
      return sysError("cannot open FIFO for writing", Path);
    if (Clock::now() >= Until)
      return makeError(ErrorCode::Timeout, "the model side did not open '",
                       Path, "' for reading in time");
    std::this_thread::sleep_for(Sleep);
    Sleep = std::min(Sleep * 2, std::chrono::microseconds(20000));
  }
  auto Keepalive = openForRead(Path);
  if (!Keepalive)
    return Keepalive.takeError();
  End.Keepalive = std::move(*Keepalive);
  return End;
}

Error writeAll(const WriteEnd &End, struct iovec *Parts, int NumParts,
               Deadline Until, const char *What) {
  while (NumParts > 0) {
    ssize_t N = ::writev(End.Write.get(), Parts, NumParts);
    if (N < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN)
        return sysError("write failed while", What);
      // No room: wait for some, or for the peer to go away (no writer left
      // on its FIFO: POLLHUP, which poll reports whatever was asked).
      struct pollfd P[2] = {{End.Write.get(), POLLOUT, 0}, {End.PeerOut, 0, 0}};
      int Ms = millisecondsLeft(Until);
      if (Ms == 0)
        return timeoutError(What);
      int R = ::poll(P, End.PeerOut >= 0 ? 2 : 1, Ms);
      if (R == 0)
        return timeoutError(What);
      if (R < 0 && errno != EINTR)
        return sysError("poll failed while", What);
      if (R > 0 && !(P[0].revents & POLLOUT) && (P[1].revents & POLLHUP))
        return makeError(ErrorCode::PeerClosed,
                         "the model side closed its end while ", What);
      continue;
    }
    size_t Left = size_t(N);
    while (NumParts > 0 && Left >= Parts->iov_len) {
      Left -= Parts->iov_len;
      ++Parts;
      --NumParts;
    }
    if (NumParts > 0) {
      Parts->iov_base = static_cast<char *>(Parts->iov_base) + Left;
      Parts->iov_len -= Left;
    }
  }
  return Error::success();
}

Error writeAll(const WriteEnd &End, std::string_view Bytes, Deadline Until,
               const char *What) {
  struct iovec Part = {const_cast<char *>(Bytes.data()), Bytes.size()};
  return writeAll(End, &Part, 1, Until, What);
}

Reader::Reader(int FD, size_t MaxBuffer) : FD(FD), MaxBuffer(MaxBuffer) {
  Buffer.resize(std::min<size_t>(MaxBuffer, 64 * 1024));
}

Reader::~Reader() = default;

void Reader::startBlocking() {
  Mode = WaitMode::Poll; // unless all of this works
  auto W = ReadWatchdog::create(FD);
  if (!W)
    return;
  int Flags = ::fcntl(FD, F_GETFL);
  if (Flags < 0 || ::fcntl(FD, F_SETFL, Flags & ~O_NONBLOCK) != 0)
    return;
  Watchdog = std::move(*W);
  Mode = WaitMode::Block;
}

void Reader::compact(size_t Needed) {
  if (Begin > 0) {
    std::memmove(&Buffer[0], &Buffer[Begin], End - Begin);
    End -= Begin;
    Begin = 0;
  }
  if (Needed > Buffer.size())
    Buffer.resize(Needed);
}

Error Reader::fill(Deadline Until, const char *What, size_t Wanted) {
  if (Wanted > MaxBuffer)
    return makeError(ErrorCode::TooLarge, "message of ", std::to_string(Wanted),
                     " bytes exceeds the limit of ", std::to_string(MaxBuffer),
                     " while ", What);
  if (Begin + Wanted > Buffer.size())
    compact(Wanted);
  auto TimedOut = [&] {
    return makeError(ErrorCode::Timeout, "timed out ", What, " (got ",
                     std::to_string(End - Begin), " of ",
                     std::to_string(Wanted), " bytes)");
  };
  while (End - Begin < Wanted) {
    ssize_t N;
    if (Mode == WaitMode::Block) {
      // One system call: the watchdog interrupts the read at the deadline.
      if (Clock::now() >= Until)
        return TimedOut();
      Watchdog->arm(Until);
      N = ::read(FD, &Buffer[End], Buffer.size() - End);
      int ReadErrno = errno;
      if (Watchdog->disarm())
        return TimedOut(); // the byte it wrote may be in Buffer: stream lost
      errno = ReadErrno;
    } else {
      // poll() first: in a request/reply protocol the reply is almost never
      // there yet when we get to read it (trying the read first measured one
      // wasted read per call and 2-4% slower round trips on both CPU
      // regimes).
      struct pollfd P = {FD, POLLIN, 0};
      int Ms = millisecondsLeft(Until);
      int R = Ms == 0 ? 0 : ::poll(&P, 1, Ms);
      if (R == 0)
        return TimedOut();
      if (R < 0) {
        if (errno == EINTR)
          continue;
        return sysError("poll failed while", What);
      }
      N = ::read(FD, &Buffer[End], Buffer.size() - End);
      if (N > 0 && Mode == WaitMode::WillBlock)
        startBlocking();
    }
    if (N > 0) {
      End += size_t(N);
      continue;
    }
    if (N == 0)
      return makeError(ErrorCode::PeerClosed,
                       "the model side closed its end (EOF) while ", What,
                       " (got ", std::to_string(End - Begin), " of ",
                       std::to_string(Wanted), " bytes)");
    if (errno != EAGAIN && errno != EINTR)
      return sysError("read failed while", What);
  }
  return Error::success();
}

Expected<std::string_view> Reader::readExact(size_t N, Deadline Until,
                                             const char *What) {
  if (End - Begin < N) {
    if (Error E = fill(Until, What, N))
      return E;
  }
  std::string_view V(&Buffer[Begin], N);
  Begin += N;
  if (Begin == End)
    Begin = End = 0;
  return V;
}

Expected<std::string_view> Reader::readLine(size_t MaxLength, Deadline Until,
                                            const char *What) {
  size_t Scanned = 0;
  while (true) {
    const char *Start = Buffer.data() + Begin;
    const void *NL = std::memchr(Start + Scanned, '\n', End - Begin - Scanned);
    if (NL) {
      size_t Len = size_t(static_cast<const char *>(NL) - Start);
      std::string_view V(Start, Len);
      Begin += Len + 1;
      if (Begin == End)
        Begin = End = 0;
      return V;
    }
    Scanned = End - Begin;
    if (Scanned > MaxLength)
      return makeError(ErrorCode::Protocol, "line longer than ",
                       std::to_string(MaxLength), " bytes while ", What);
    if (Error E = fill(Until, What, Scanned + 1))
      return E;
  }
}

} // namespace fifo
} // namespace mlbridge

//===- support/ReadFile.cpp - Whole files, bounded ------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/ReadFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mlbridge {

Expected<std::string> readRegularFile(const std::string &Path,
                                      uint64_t MaxBytes,
                                      std::string_view What) {
  auto Fail = [&](ErrorCode Code, const std::string &Why) {
    return makeError(Code, "cannot load ", std::string(What), " '", Path,
                     "': ", Why);
  };
  int Fd = ::open(Path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (Fd < 0)
    return Fail(ErrorCode::IO, std::strerror(errno));
  struct Closer {
    int Fd;
    ~Closer() { ::close(Fd); }
  } Close{Fd};
  struct stat St;
  if (::fstat(Fd, &St) != 0)
    return Fail(ErrorCode::IO, std::strerror(errno));
  if (!S_ISREG(St.st_mode))
    return Fail(ErrorCode::IO, "not a regular file");
  if (static_cast<uint64_t>(St.st_size) > MaxBytes)
    return Fail(ErrorCode::TooLarge, std::to_string(St.st_size) +
                                         " bytes, more than the limit of " +
                                         std::to_string(MaxBytes));
  // One byte more than its size: a file that grows while it is read shows.
  std::string Bytes(static_cast<size_t>(St.st_size) + 1, '\0');
  size_t Got = 0;
  while (Got < Bytes.size()) {
    ssize_t N = ::read(Fd, Bytes.data() + Got, Bytes.size() - Got);
    if (N < 0 && errno == EINTR)
      continue;
    if (N < 0)
      return Fail(ErrorCode::IO, std::strerror(errno));
    if (N == 0)
      break;
    Got += static_cast<size_t>(N);
  }
  if (Got > static_cast<uint64_t>(St.st_size))
    return Fail(ErrorCode::IO, "the file grew while it was read");
  Bytes.resize(Got);
  return Bytes;
}

} // namespace mlbridge

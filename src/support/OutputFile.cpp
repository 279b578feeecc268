//===- support/OutputFile.cpp - Opening a log or statistics file ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/OutputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mlbridge {

Expected<int> openOutputFile(const std::string &Path, int Flags,
                             std::string_view What) {
  auto Refuse = [&](const char *Why) {
    return makeError(ErrorCode::IO, "cannot open ", std::string(What), " '",
                     Path, "': ", Why);
  };
  int Fd = ::open(
      Path.c_str(),
      Flags | O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (Fd < 0)
    return Refuse(errno == ELOOP   ? "it is a symbolic link"
                  : errno == ENXIO ? "it is a FIFO without a reader"
                                   : std::strerror(errno));
  struct stat Info;
  if (::fstat(Fd, &Info) != 0 || !S_ISREG(Info.st_mode)) {
    ::close(Fd);
    return Refuse("not a regular file");
  }
  // A regular file never blocks; clear the flag so writes are plain ones.
  ::fcntl(Fd, F_SETFL, ::fcntl(Fd, F_GETFL) & ~O_NONBLOCK);
  return Fd;
}

Error writeOutputFile(const std::string &Path, std::string_view Text,
                      std::string_view What) {
  auto Opened = openOutputFile(Path, O_TRUNC, What);
  if (!Opened)
    return Opened.takeError();
  int Why = 0;
  while (!Text.empty()) {
    ssize_t N = ::write(*Opened, Text.data(), Text.size());
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      Why = N < 0 ? errno : EIO;
      break;
    }
    Text.remove_prefix(size_t(N));
  }
  if (::close(*Opened) != 0 && !Why)
    Why = errno;
  if (Why)
    return makeError(ErrorCode::IO, "cannot write ", std::string(What), " '",
                     Path, "': ", std::strerror(Why));
  return Error::success();
}

} // namespace mlbridge

//===- support/AppendFile.cpp - Whole lines appended to a file ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/AppendFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mlbridge {

AppendFile::~AppendFile() {
  if (Fd >= 0)
    ::close(Fd);
}

bool AppendFile::open(const std::string &Path, std::string &Problem) {
  int Opened =
      ::open(Path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (Opened < 0) {
    Problem = "cannot open '" + Path + "': " + std::strerror(errno);
    return false;
  }
  if (Fd >= 0)
    ::close(Fd);
  Fd = Opened;
  return true;
}

bool AppendFile::append(const std::string &Line) {
  if (Fd < 0)
    return false;
  ssize_t Written;
  do
    Written = ::write(Fd, Line.data(), Line.size());
  while (Written < 0 && errno == EINTR);
  if (Written == static_cast<ssize_t>(Line.size()))
    return true;
  ::close(Fd);
  Fd = -1;
  return false;
}

} // namespace mlbridge

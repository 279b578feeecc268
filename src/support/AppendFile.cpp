//===- support/AppendFile.cpp - Whole lines appended to a file ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/AppendFile.h"

#include "support/OutputFile.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace mlbridge {

AppendFile::~AppendFile() {
  if (Fd >= 0)
    ::close(Fd);
}

bool AppendFile::open(const std::string &Path, std::string &Problem) {
  auto Opened = openOutputFile(Path, O_APPEND, "the log");
  if (!Opened) {
    Problem = Opened.takeError().message();
    return false;
  }
  if (Fd >= 0)
    ::close(Fd);
  Fd = *Opened;
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

//===- pipe/FifoChannel.cpp - A private pair of FIFOs ---------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/FifoChannel.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace mlbridge {

Expected<FifoChannel> FifoChannel::create(const std::string &ParentDir) {
  std::string Parent = ParentDir;
  if (Parent.empty()) {
    const char *Tmp = std::getenv("TMPDIR");
    Parent = Tmp && *Tmp ? Tmp : "/tmp";
  }
  std::string Template = Parent + "/mlbridge-XXXXXX";
  std::vector<char> Buf(Template.begin(), Template.end());
  Buf.push_back('\0');
  if (!::mkdtemp(Buf.data())) // mkdtemp creates the directory mode 0700
    return makeError(ErrorCode::IO, "cannot create a private directory in '",
                     Parent, "': ", std::strerror(errno));
  FifoChannel C;
  C.Directory = Buf.data();
  C.Base = C.Directory + "/channel";
  for (const std::string &Path : {C.inPath(), C.outPath()}) {
    if (::mkfifo(Path.c_str(), 0600) != 0)
      return makeError(ErrorCode::IO, "cannot create FIFO '", Path,
                       "': ", std::strerror(errno));
    // mkfifo honours the umask; make the mode exactly 0600 regardless.
    if (::chmod(Path.c_str(), 0600) != 0)
      return makeError(ErrorCode::IO, "cannot chmod FIFO '", Path,
                       "': ", std::strerror(errno));
  }
  return C;
}

FifoChannel::FifoChannel(FifoChannel &&Other) noexcept
    : Directory(std::move(Other.Directory)), Base(std::move(Other.Base)) {
  Other.Directory.clear();
  Other.Base.clear();
}

FifoChannel &FifoChannel::operator=(FifoChannel &&Other) noexcept {
  if (this != &Other) {
    remove();
    Directory = std::move(Other.Directory);
    Base = std::move(Other.Base);
    Other.Directory.clear();
    Other.Base.clear();
  }
  return *this;
}

FifoChannel::~FifoChannel() { remove(); }

void FifoChannel::remove() {
  if (Directory.empty())
    return;
  ::unlink(inPath().c_str());
  ::unlink(outPath().c_str());
  ::rmdir(Directory.c_str());
  Directory.clear();
  Base.clear();
}

} // namespace mlbridge

//===- pipe/SharedRegion.cpp - A file mapped shared between processes -----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "pipe/SharedRegion.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace mlbridge {
namespace fifo {

Expected<SharedRegion> SharedRegion::create(const std::string &Path,
                                            size_t Size) {
  auto Failed = [&](const char *What) {
    return makeError(ErrorCode::IO, "cannot ", What, " the shared memory '",
                     Path, "': ", std::strerror(errno));
  };
  // A stale file of an earlier session is replaced, never reused: O_EXCL
  // then makes sure the file mapped is the one made here.
  if (::unlink(Path.c_str()) != 0 && errno != ENOENT)
    return Failed("replace");
  int FD = ::open(Path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (FD < 0)
    return Failed("create");
  if (::ftruncate(FD, off_t(Size)) != 0) {
    Error E = Failed("size");
    ::close(FD);
    ::unlink(Path.c_str());
    return E;
  }
  void *Map = ::mmap(nullptr, Size, PROT_READ | PROT_WRITE, MAP_SHARED, FD, 0);
  int MapErrno = errno;
  ::close(FD); // the mapping keeps the file
  if (Map == MAP_FAILED) {
    errno = MapErrno;
    Error E = Failed("map");
    ::unlink(Path.c_str());
    return E;
  }
  SharedRegion R;
  R.Path = Path;
  R.Data = static_cast<uint8_t *>(Map);
  R.Size = Size;
  return R;
}

SharedRegion::SharedRegion(SharedRegion &&Other) noexcept
    : Path(std::move(Other.Path)), Data(Other.Data), Size(Other.Size) {
  Other.Data = nullptr;
  Other.Size = 0;
  Other.Path.clear();
}

SharedRegion &SharedRegion::operator=(SharedRegion &&Other) noexcept {
  if (this != &Other) {
    reset();
    Path = std::move(Other.Path);
    Data = Other.Data;
    Size = Other.Size;
    Other.Data = nullptr;
    Other.Size = 0;
    Other.Path.clear();
  }
  return *this;
}

SharedRegion::~SharedRegion() { reset(); }

void SharedRegion::reset() {
  if (Data)
    ::munmap(Data, Size);
  if (!Path.empty())
    ::unlink(Path.c_str());
  Data = nullptr;
  Size = 0;
  Path.clear();
}

} // namespace fifo
} // namespace mlbridge

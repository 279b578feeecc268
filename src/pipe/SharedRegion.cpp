//===- pipe/SharedRegion.cpp - Sealed memory shared between processes -----===//
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
#include <utility>

namespace mlbridge {
namespace fifo {

int requiredSeals() { return F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL; }

Expected<SharedRegion> SharedRegion::create(size_t Size) {
  SharedRegion R;
  auto Failed = [&](const char *What) {
    return makeError(ErrorCode::IO, "cannot ", What,
                     " the shared memory: ", std::strerror(errno));
  };
  R.FD = ::memfd_create("mlbridge-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (R.FD < 0)
    return Failed("create");
  if (::ftruncate(R.FD, off_t(Size)) != 0)
    return Failed("size");
  // Sealed before the model side can know of it: from here on nobody can
  // change its size, so the mapping below never faults.
  if (::fcntl(R.FD, F_ADD_SEALS, requiredSeals()) != 0)
    return Failed("seal");
  void *Map =
      ::mmap(nullptr, Size, PROT_READ | PROT_WRITE, MAP_SHARED, R.FD, 0);
  if (Map == MAP_FAILED)
    return Failed("map");
  R.Data = static_cast<uint8_t *>(Map);
  R.Size = Size;
  return R;
}

SharedRegion::SharedRegion(SharedRegion &&Other) noexcept
    : FD(std::exchange(Other.FD, -1)), Data(std::exchange(Other.Data, nullptr)),
      Size(std::exchange(Other.Size, 0)) {}

SharedRegion &SharedRegion::operator=(SharedRegion &&Other) noexcept {
  if (this != &Other) {
    reset();
    FD = std::exchange(Other.FD, -1);
    Data = std::exchange(Other.Data, nullptr);
    Size = std::exchange(Other.Size, 0);
  }
  return *this;
}

SharedRegion::~SharedRegion() { reset(); }

void SharedRegion::reset() {
  if (Data)
    ::munmap(Data, Size);
  if (FD >= 0)
    ::close(FD);
  FD = -1;
  Data = nullptr;
  Size = 0;
}

} // namespace fifo
} // namespace mlbridge

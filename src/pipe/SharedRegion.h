//===- pipe/SharedRegion.h - Sealed memory shared between processes -*- C++
//-*-//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: the memory of the shared-memory protocol, created by the
/// compiler side as an anonymous file (memfd) whose size is sealed: neither
/// side can shrink or grow it, so no access to the mapping can fault
/// (SIGBUS) whatever the peer does. The model side opens it as
/// /proc/PID/fd/FD (the handshake names both) and refuses it unless the
/// seals are there.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_SHAREDREGION_H
#define MLBRIDGE_PIPE_SHAREDREGION_H

#include "mlbridge/Error.h"

#include <cstddef>
#include <cstdint>

namespace mlbridge {
namespace fifo {

/// The seals every region carries: no shrinking, no growing, no new seals.
int requiredSeals();

/// A zero-filled sealed memfd of a fixed size mapped shared; owns both.
class SharedRegion {
public:
  /// Creates a memfd of \p Size bytes of zeros, seals its size, maps it.
  static Expected<SharedRegion> create(size_t Size);

  SharedRegion() = default;
  SharedRegion(SharedRegion &&Other) noexcept;
  SharedRegion &operator=(SharedRegion &&Other) noexcept;
  SharedRegion(const SharedRegion &) = delete;
  SharedRegion &operator=(const SharedRegion &) = delete;
  /// Unmaps the region and closes its descriptor.
  ~SharedRegion();

  /// The mapped bytes.
  uint8_t *data() const { return Data; }
  /// The mapping's size.
  size_t size() const { return Size; }
  /// The memfd (close-on-exec), which the model side opens through /proc.
  int fd() const { return FD; }

private:
  void reset();

  int FD = -1;
  uint8_t *Data = nullptr;
  size_t Size = 0;
};

} // namespace fifo
} // namespace mlbridge

#endif // MLBRIDGE_PIPE_SHAREDREGION_H

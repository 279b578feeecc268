//===- pipe/SharedRegion.h - A file mapped shared between processes -*- C++
//-*-//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: the file of the shared-memory protocol, created by the compiler
/// side (mode 0600, next to the channel's FIFOs), mapped shared, unmapped
/// and removed on destruction.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_SHAREDREGION_H
#define MLBRIDGE_PIPE_SHAREDREGION_H

#include "mlbridge/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlbridge {
namespace fifo {

/// A zero-filled file of a fixed size mapped shared; owns the file.
class SharedRegion {
public:
  /// Creates \p Path (replacing a file of that name), \p Size bytes of
  /// zeros, and maps it.
  static Expected<SharedRegion> create(const std::string &Path, size_t Size);

  SharedRegion() = default;
  SharedRegion(SharedRegion &&Other) noexcept;
  SharedRegion &operator=(SharedRegion &&Other) noexcept;
  SharedRegion(const SharedRegion &) = delete;
  SharedRegion &operator=(const SharedRegion &) = delete;
  /// Unmaps the region and removes its file.
  ~SharedRegion();

  /// The mapped bytes.
  uint8_t *data() const { return Data; }
  /// The mapping's size.
  size_t size() const { return Size; }
  /// The file's path.
  const std::string &path() const { return Path; }

private:
  void reset();

  std::string Path;
  uint8_t *Data = nullptr;
  size_t Size = 0;
};

} // namespace fifo
} // namespace mlbridge

#endif // MLBRIDGE_PIPE_SHAREDREGION_H

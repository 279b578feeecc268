//===- mlbridge/TensorBuffers.h - Owned tensor storage ----------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// TensorBuffers: a list of TensorSpecs with one contiguous, zero-initialised,
/// 64-byte-aligned buffer per spec, all carved from one allocation made at
/// construction. Runners hold their inputs and outputs in these; codecs read
/// and write them in place, so steady-state calls allocate nothing.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TENSORBUFFERS_H
#define MLBRIDGE_TENSORBUFFERS_H

#include "mlbridge/TensorSpec.h"

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

namespace mlbridge {

/// Specs plus their runner-owned storage.
class TensorBuffers {
public:
  /// Allocates one buffer per spec. Fails on an invalid spec (see
  /// TensorSpec::isValid) and on duplicate or empty names.
  static Expected<TensorBuffers> create(std::vector<TensorSpec> Specs,
                                        const char *What);

  /// An empty list.
  TensorBuffers() = default;

  /// Number of tensors.
  size_t size() const { return Specs.size(); }
  /// The spec of tensor \p I.
  const TensorSpec &spec(size_t I) const { return Specs[I]; }
  /// All specs, in order.
  const std::vector<TensorSpec> &specs() const { return Specs; }
  /// Storage of tensor \p I (spec(I).byteSize() bytes).
  void *data(size_t I) { return Storage.get() + Offsets[I]; }
  /// Storage of tensor \p I (read-only).
  const void *data(size_t I) const { return Storage.get() + Offsets[I]; }
  /// Index of the tensor called \p Name, or -1.
  long indexOf(std::string_view Name) const;
  /// Sum of all tensors' byte sizes.
  size_t totalBytes() const { return TotalBytes; }

private:
  struct FreeDeleter {
    void operator()(std::byte *P) const;
  };
  std::vector<TensorSpec> Specs;
  std::vector<size_t> Offsets;
  std::unique_ptr<std::byte[], FreeDeleter> Storage;
  size_t TotalBytes = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_TENSORBUFFERS_H

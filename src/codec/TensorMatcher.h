//===- codec/TensorMatcher.h - Check decoded tensors -------------*- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Shared validation for self-describing formats (json, protobuf): each
/// tensor in a message must be declared, appear once, have the declared type
/// and element count, and every declared tensor must be present.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_CODEC_TENSORMATCHER_H
#define MLBRIDGE_CODEC_TENSORMATCHER_H

#include "mlbridge/TensorBuffers.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace mlbridge {

/// Tracks which declared tensors a message has delivered.
class TensorMatcher {
public:
  /// Matches against the tensors declared by \p Into.
  explicit TensorMatcher(TensorBuffers &Into);

  /// Looks up the tensor \p Name of type \p Type; fails if undeclared,
  /// repeated or of another type. Returns its index in the buffers.
  Expected<size_t> claim(std::string_view Name, DType Type);

  /// Checks that \p Shape (dimensions as read) has the declared element count
  /// of tensor \p Index.
  Error checkShape(size_t Index, const int64_t *Dims, size_t NumDims) const;

  /// Checks that \p Bytes equals tensor \p Index's byte size.
  Error checkByteSize(size_t Index, size_t Bytes) const;

  /// Fails if a declared tensor was not delivered.
  Error finish() const;

  /// The buffers being filled.
  TensorBuffers &buffers() { return Into; }

private:
  bool seen(size_t I) const;
  void markSeen(size_t I);

  TensorBuffers &Into;
  static constexpr size_t InlineBits = 1024;
  uint64_t InlineSeen[InlineBits / 64] = {};
  std::vector<bool> ExtraSeen;
};

} // namespace mlbridge

#endif // MLBRIDGE_CODEC_TENSORMATCHER_H

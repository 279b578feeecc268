//===- pipe/FrameHeader.h - Extended-protocol frames ------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_FRAMEHEADER_H
#define MLBRIDGE_PIPE_FRAMEHEADER_H

#include <cstdint>
#include <cstring>

namespace mlbridge {

/// Frame kinds of the extended pipe protocol (docs/protocol.md).
enum class FrameKind : uint32_t {
  Context = 1,
  Observation = 2,
  Result = 3,
  Error = 4,
};

/// The 8-byte frame header: payload length and kind, little-endian.
struct FrameHeader {
  /// Encoded size in bytes.
  static constexpr size_t Size = 8;
  /// Payload length.
  uint32_t Length;
  /// Raw kind (may be invalid when read from the wire).
  uint32_t Kind;

  /// Writes a header into \p Out (Size bytes).
  static void write(char *Out, uint32_t Length, FrameKind Kind) {
    uint32_t K = uint32_t(Kind);
    for (int I = 0; I < 4; ++I) {
      Out[I] = char((Length >> (8 * I)) & 0xFF);
      Out[4 + I] = char((K >> (8 * I)) & 0xFF);
    }
  }
  /// Reads a header from \p In (Size bytes).
  static FrameHeader read(const char *In) {
    FrameHeader H{0, 0};
    for (int I = 0; I < 4; ++I) {
      H.Length |= uint32_t(uint8_t(In[I])) << (8 * I);
      H.Kind |= uint32_t(uint8_t(In[4 + I])) << (8 * I);
    }
    return H;
  }
};

} // namespace mlbridge

#endif // MLBRIDGE_PIPE_FRAMEHEADER_H

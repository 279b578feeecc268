//===- pipe/ShmLayout.h - Layout of the shared-memory protocol --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: where everything lives in the file of the `shm` pipe protocol
/// (docs/protocol.md). The model side computes the same layout from the
/// handshake's specs and refuses a file whose header disagrees.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_SHMLAYOUT_H
#define MLBRIDGE_PIPE_SHMLAYOUT_H

#include "mlbridge/Error.h"
#include "mlbridge/TensorBuffers.h"

#include <cstdint>
#include <vector>

namespace mlbridge {
namespace shm {

/// Byte offsets of the header's little-endian uint32 words.
enum Word : uint32_t {
  // Written once by the compiler side, before the handshake.
  Magic = 0, // 8 bytes: "mlbshm01"
  LayoutVersion = 8,
  TotalBytes = 12,
  RequestOffset = 16,
  RequestBytes = 20,
  ReplyOffset = 24,
  ReplyBytes = 28,
  MessageOffset = 32,
  MessageCapacity = 36,
  // Written by the compiler side (a cache line of their own).
  RequestSeq = 64,
  CompilerWaiting = 68,
  ContextSeq = 72,
  ContextLength = 76,
  // Written by the model side (a cache line of their own).
  ReplySeq = 128,
  ModelWaiting = 132,
  ReplyStatus = 136,
  ErrorLength = 140,
  /// 1 when the two processes may run at once (their CPU sets, the
  /// compiler's from the handshake, hold two CPUs): then both may spin.
  SpinAllowed = 144,
};

/// The magic bytes at offset 0.
inline constexpr char MagicBytes[8] = {'m', 'l', 'b', 's', 'h', 'm', '0', '1'};
/// The layout this code writes.
inline constexpr uint32_t Version = 1;
/// Bytes of the header; areas and tensors start at multiples of Align.
inline constexpr uint32_t HeaderBytes = 192, Align = 64;
/// ReplyStatus values.
inline constexpr uint32_t StatusResult = 0, StatusError = 1;

/// Where one session's tensors and messages are.
struct Layout {
  /// Offset of each input tensor, then of each output tensor.
  std::vector<uint32_t> InputOffsets, OutputOffsets;
  uint32_t RequestOffset = 0, RequestBytes = 0;
  uint32_t ReplyOffset = 0, ReplyBytes = 0;
  uint32_t MessageOffset = 0, MessageCapacity = 0;
  /// The file's size.
  uint32_t Total = 0;
};

/// The layout for \p Inputs and \p Outputs with a message area of
/// \p MessageCapacity bytes: the request's tensors in order, each at a
/// multiple of 64, from offset 192; then the reply's; then the message area.
/// TooLarge past 2^31 bytes.
Expected<Layout> computeLayout(const TensorBuffers &Inputs,
                               const TensorBuffers &Outputs,
                               uint32_t MessageCapacity);

/// The header word \p W of the region at \p Base.
inline uint32_t *word(uint8_t *Base, Word W) {
  return reinterpret_cast<uint32_t *>(Base + W);
}
/// Loads the header word \p W atomically (the peer writes it concurrently).
inline uint32_t load(const uint8_t *Base, Word W,
                     int Order = __ATOMIC_ACQUIRE) {
  return __atomic_load_n(reinterpret_cast<const uint32_t *>(Base + W), Order);
}
/// Stores the header word \p W atomically.
inline void store(uint8_t *Base, Word W, uint32_t V,
                  int Order = __ATOMIC_RELEASE) {
  __atomic_store_n(word(Base, W), V, Order);
}

/// Writes \p L's header words (and the magic) at \p Base.
void writeHeader(uint8_t *Base, const Layout &L);

/// How the model side answered.
enum class ReplyKind { Result, ModelError, Malformed };

/// Reads the model side's answer from the region at \p Base (laid out as
/// \p L; the peer may have written anything into it): its outputs into
/// \p Outputs (Result), or a ModelFailure error carrying its message (at
/// most 4096 bytes, clamped to the message area), or a Protocol error for a
/// status other than 0 and 1. Reads nothing outside the layout.
ReplyKind readReply(const uint8_t *Base, const Layout &L,
                    TensorBuffers &Outputs, Error &Why);

} // namespace shm
} // namespace mlbridge

#endif // MLBRIDGE_PIPE_SHMLAYOUT_H

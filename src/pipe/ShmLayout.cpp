//===- pipe/ShmLayout.cpp - Layout of the shared-memory protocol ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "pipe/ShmLayout.h"

#include <algorithm>
#include <cstring>

namespace mlbridge {
namespace shm {

namespace {
uint64_t alignUp(uint64_t N) { return (N + Align - 1) / Align * Align; }

void put32(uint8_t *Base, Word W, uint32_t V) {
  for (int I = 0; I < 4; ++I)
    Base[W + I] = uint8_t(V >> (8 * I));
}
} // namespace

Expected<Layout> computeLayout(const TensorBuffers &Inputs,
                               const TensorBuffers &Outputs,
                               uint32_t MessageCapacity) {
  Layout L;
  uint64_t At = HeaderBytes;
  auto Place = [&](const TensorBuffers &B, std::vector<uint32_t> &Offsets,
                   uint32_t &AreaOffset, uint32_t &AreaBytes) {
    At = alignUp(At);
    uint64_t Start = At;
    for (size_t I = 0; I < B.size(); ++I) {
      At = alignUp(At);
      Offsets.push_back(uint32_t(At)); // checked below
      At += B.spec(I).byteSize();
    }
    AreaOffset = uint32_t(Start);
    AreaBytes = uint32_t(At - Start);
  };
  Place(Inputs, L.InputOffsets, L.RequestOffset, L.RequestBytes);
  if (At > (uint64_t(1) << 31))
    return makeError(ErrorCode::TooLarge, "the shared memory of ",
                     std::to_string(At), " bytes exceeds 2^31");
  Place(Outputs, L.OutputOffsets, L.ReplyOffset, L.ReplyBytes);
  At = alignUp(At);
  L.MessageOffset = uint32_t(At);
  L.MessageCapacity = MessageCapacity;
  At = alignUp(At + MessageCapacity);
  if (At > (uint64_t(1) << 31))
    return makeError(ErrorCode::TooLarge, "the shared memory of ",
                     std::to_string(At), " bytes exceeds 2^31");
  L.Total = uint32_t(At);
  return L;
}

void writeHeader(uint8_t *Base, const Layout &L) {
  std::memcpy(Base + Magic, MagicBytes, sizeof(MagicBytes));
  put32(Base, LayoutVersion, Version);
  put32(Base, TotalBytes, L.Total);
  put32(Base, RequestOffset, L.RequestOffset);
  put32(Base, RequestBytes, L.RequestBytes);
  put32(Base, ReplyOffset, L.ReplyOffset);
  put32(Base, ReplyBytes, L.ReplyBytes);
  put32(Base, MessageOffset, L.MessageOffset);
  put32(Base, MessageCapacity, L.MessageCapacity);
}

ReplyKind readReply(const uint8_t *Base, const Layout &L,
                    TensorBuffers &Outputs, Error &Why) {
  uint32_t Status = load(Base, ReplyStatus, __ATOMIC_RELAXED);
  if (Status == StatusError) {
    uint32_t Length = std::min(load(Base, ErrorLength, __ATOMIC_RELAXED),
                               std::min<uint32_t>(L.MessageCapacity, 4096));
    Why = makeError(
        ErrorCode::ModelFailure, "model side reported: ",
        std::string(reinterpret_cast<const char *>(Base + L.MessageOffset),
                    Length));
    return ReplyKind::ModelError;
  }
  if (Status != StatusResult) {
    Why = makeError(ErrorCode::Protocol, "the model side wrote reply status ",
                    std::to_string(Status), " (0: result, 1: error)");
    return ReplyKind::Malformed;
  }
  for (size_t I = 0; I < Outputs.size(); ++I)
    std::memcpy(Outputs.data(I), Base + L.OutputOffsets[I],
                Outputs.spec(I).byteSize());
  return ReplyKind::Result;
}

} // namespace shm
} // namespace mlbridge

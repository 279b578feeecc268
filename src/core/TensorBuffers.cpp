//===- core/TensorBuffers.cpp - Owned tensor storage ----------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/TensorBuffers.h"

#include <cstdlib>
#include <cstring>

namespace mlbridge {

namespace {
constexpr size_t Alignment = 64;
size_t alignUp(size_t N) { return (N + Alignment - 1) & ~(Alignment - 1); }
} // namespace

void TensorBuffers::FreeDeleter::operator()(std::byte *P) const {
  std::free(P);
}

Expected<TensorBuffers> TensorBuffers::create(std::vector<TensorSpec> Specs,
                                              const char *What) {
  if (Error E = checkSpecs(Specs, What))
    return E;
  TensorBuffers B;
  size_t Offset = 0;
  for (const TensorSpec &S : Specs) {
    B.Offsets.push_back(Offset);
    B.TotalBytes += S.byteSize();
    Offset += alignUp(S.byteSize() ? S.byteSize() : 1);
    if (Offset > (size_t(1) << 40))
      return makeError(ErrorCode::InvalidArgument, What,
                       ": tensors are too large to allocate");
  }
  void *Raw = std::aligned_alloc(Alignment, Offset ? Offset : Alignment);
  if (!Raw)
    return makeError(ErrorCode::IO, What, ": cannot allocate ",
                     std::to_string(Offset), " bytes for tensors");
  std::memset(Raw, 0, Offset);
  B.Storage.reset(static_cast<std::byte *>(Raw));
  B.Specs = std::move(Specs);
  return B;
}

long TensorBuffers::indexOf(std::string_view Name) const {
  for (size_t I = 0; I < Specs.size(); ++I)
    if (Specs[I].name() == Name)
      return long(I);
  return -1;
}

} // namespace mlbridge

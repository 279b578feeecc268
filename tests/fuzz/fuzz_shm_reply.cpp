//===- fuzz_shm_reply.cpp - Fuzz reading a shm region the peer wrote ------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The shm protocol's region holds whatever the model side wrote: the
// compiler side reads the reply status, the error message length and the
// outputs from it (shm::readReply, src/pipe/ShmLayout.cpp). The input is
// the region's bytes for a session of two inputs and two outputs (int64 [1],
// float [3]) and a 1 KiB message area, zero-padded to its size: every status
// and length must give a result, a model error within the message area, or a
// protocol error, and never a read outside the region (ASan).
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "pipe/ShmLayout.h"

#include <cstring>
#include <vector>

using namespace mlbridge;

namespace {
struct Session {
  TensorBuffers Inputs, Outputs;
  shm::Layout Layout;
};

Session &session() {
  static Session S = [] {
    auto In = TensorBuffers::create(
        {TensorSpec::of<int64_t>("a"), TensorSpec::of<float>("b", {3})},
        "fuzz");
    auto Out = TensorBuffers::create(
        {TensorSpec::of<int64_t>("y"), TensorSpec::of<float>("z", {3})},
        "fuzz");
    if (!In || !Out)
      fuzz::die("bad schema", makeError(ErrorCode::Protocol, "specs"));
    auto L = shm::computeLayout(*In, *Out, 1024);
    if (!L)
      fuzz::die("bad layout", L.takeError());
    return Session{std::move(*In), std::move(*Out), std::move(*L)};
  }();
  return S;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  Session &S = session();
  // Exactly the region's size, as the compiler maps it (a heap copy, so
  // that ASan sees any read past its end).
  std::vector<uint8_t> Region(S.Layout.Total, 0);
  std::memcpy(Region.data(), Data, std::min<size_t>(Size, Region.size()));
  Error Why;
  switch (shm::readReply(Region.data(), S.Layout, S.Outputs, Why)) {
  case shm::ReplyKind::Result:
    if (Why)
      fuzz::die("a result with an error", std::move(Why));
    break;
  case shm::ReplyKind::ModelError:
    if (Why.code() != ErrorCode::ModelFailure ||
        Why.message().size() > 4096 + 64)
      fuzz::die("a model error of the wrong kind or size", std::move(Why));
    break;
  case shm::ReplyKind::Malformed:
    if (Why.code() != ErrorCode::Protocol)
      fuzz::die("a malformed reply of the wrong kind", std::move(Why));
    break;
  }
  return 0;
}

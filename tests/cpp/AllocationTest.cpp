//===- AllocationTest.cpp - Steady-state evaluate() allocates nothing -----===//
//
// Replaces the global operator new/delete family (all of it, so that code
// mixing the variants, like gRPC, stays consistent) for the test binary with
// one that counts allocations per thread, then checks that, after warm-up,
// evaluate() on a pipe runner makes no heap allocation in any protocol or
// format.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include "TestHelpers.h"
#include "pipe/FrameHeader.h"

#include <cstdlib>
#include <new>
#include <thread>

namespace {
thread_local uint64_t ThreadAllocations = 0;
} // namespace

void *operator new(size_t N) {
  ++ThreadAllocations;
  if (void *P = std::malloc(N ? N : 1))
    return P;
  throw std::bad_alloc();
}
void *operator new[](size_t N) { return operator new(N); }
void *operator new(size_t N, const std::nothrow_t &) noexcept {
  ++ThreadAllocations;
  return std::malloc(N ? N : 1);
}
void *operator new[](size_t N, const std::nothrow_t &T) noexcept {
  return operator new(N, T);
}
void operator delete(void *P) noexcept { std::free(P); }
void operator delete(void *P, size_t) noexcept { std::free(P); }
void operator delete[](void *P) noexcept { std::free(P); }
void operator delete[](void *P, size_t) noexcept { std::free(P); }
void operator delete(void *P, const std::nothrow_t &) noexcept { std::free(P); }
void operator delete[](void *P, const std::nothrow_t &) noexcept {
  std::free(P);
}

uint64_t mlbridge::test::threadAllocations() { return ThreadAllocations; }

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {
struct Case {
  PipeProtocol P;
  Format F;
};
class SteadyState : public ::testing::TestWithParam<Case> {};
} // namespace

TEST_P(SteadyState, EvaluateAllocatesNothing) {
  const Case C = GetParam();
  std::vector<TensorSpec> In;
  for (int I = 0; I < 64; ++I)
    In.push_back(TensorSpec::of<float>("f" + std::to_string(I)));
  std::vector<TensorSpec> Out = {TensorSpec::of<int64_t>("decision")};
  PipeOptions O;
  O.Protocol = C.P;
  O.Serialization = C.F;
  O.OpenTimeout = 20s;
  O.IoTimeout = 20s;
  ASSERT_EXPECTED(R, PipeModelRunner::create(In, Out, O));
  // The reply the host sends: decision = 1, in the session's encoding.
  TensorBuffers Reply = makeBuffers(Out);
  *static_cast<int64_t *>(Reply.data(0)) = 1;
  std::string ReplyBytes;
  ASSERT_OK(getCodec(C.F).encode(std::nullopt, Reply, ReplyBytes));
  if (C.P == PipeProtocol::Extended) {
    char Head[FrameHeader::Size];
    FrameHeader::write(Head, uint32_t(ReplyBytes.size()), FrameKind::Result);
    ReplyBytes = std::string(Head, sizeof(Head)) + ReplyBytes;
  }
  constexpr int Calls = 1000;
  std::string Base = (*R)->channelBase();
  std::thread Host([&] {
    RawHost H;
    ASSERT_TRUE(H.open(Base));
    std::string Line, Bytes;
    ASSERT_TRUE(H.readLine(Line));
    if (C.P == PipeProtocol::Extended) {
      ASSERT_TRUE(H.write("{\"mlbridge\":1}\n"));
    }
    for (int I = 0; I < Calls + 10; ++I) {
      if (C.P == PipeProtocol::Mlgo) {
        ASSERT_TRUE(H.readLine(Line));
        ASSERT_TRUE(H.readExact(64 * 4 + 1, Bytes));
      } else {
        ASSERT_TRUE(H.readExact(FrameHeader::Size, Bytes));
        ASSERT_TRUE(H.readExact(FrameHeader::read(Bytes.data()).Length, Bytes));
      }
      ASSERT_TRUE(H.write(ReplyBytes));
    }
  });
  for (int I = 0; I < 10; ++I) // warm-up: buffers reach their final size
    ASSERT_TRUE(bool((*R)->evaluate<int64_t>()));
  uint64_t Before = ThreadAllocations;
  for (int I = 0; I < Calls; ++I) {
    *(*R)->input<float>(size_t(I % 64)) = float(I);
    auto D = (*R)->evaluate<int64_t>();
    ASSERT_TRUE(bool(D));
    ASSERT_EQ(*D, 1);
  }
  EXPECT_EQ(ThreadAllocations - Before, 0u);
  // The counter itself works: a fresh runner allocates.
  uint64_t Probe = ThreadAllocations;
  auto Other = PipeModelRunner::create(In, Out, O);
  EXPECT_GT(ThreadAllocations, Probe);
  R->reset();
  Host.join();
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, SteadyState,
    ::testing::Values(Case{PipeProtocol::Mlgo, Format::Bitstream},
                      Case{PipeProtocol::Extended, Format::Bitstream},
                      Case{PipeProtocol::Extended, Format::Json},
                      Case{PipeProtocol::Extended, Format::Protobuf}),
    [](const auto &Info) {
      return std::string(Info.param.P == PipeProtocol::Mlgo ? "mlgo_"
                                                            : "extended_") +
             formatName(Info.param.F);
    });

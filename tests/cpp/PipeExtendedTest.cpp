//===- PipeExtendedTest.cpp - Framed protocol, all serialisations ---------===//

#include "mlbridge/PipeModelRunner.h"

#include "TestHelpers.h"
#include "pipe/FrameHeader.h"

#include <thread>

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {
std::string frame(FrameKind Kind, const std::string &Payload) {
  char H[FrameHeader::Size];
  FrameHeader::write(H, uint32_t(Payload.size()), Kind);
  return std::string(H, sizeof(H)) + Payload;
}

bool readFrame(RawHost &H, FrameHeader &Head, std::string &Payload) {
  std::string Bytes;
  if (!H.readExact(FrameHeader::Size, Bytes))
    return false;
  Head = FrameHeader::read(Bytes.data());
  return H.readExact(Head.Length, Payload);
}

PipeOptions extended(Format F) {
  PipeOptions O;
  O.Protocol = PipeProtocol::Extended;
  O.Serialization = F;
  O.OpenTimeout = 20s;
  O.IoTimeout = 20s;
  return O;
}

class PipeExtended : public ::testing::TestWithParam<Format> {};
} // namespace

TEST_P(PipeExtended, AllDTypesBothWaysWithModelErrors) {
  Format F = GetParam();
  std::vector<TensorSpec> In = allDTypeSpecs();
  std::vector<TensorSpec> Out = allDTypeSpecs("_out");
  ASSERT_EXPECTED(R, PipeModelRunner::create(In, Out, extended(F)));
  std::string Base = (*R)->channelBase();
  std::string Handshake, ContextName;
  std::vector<uint64_t> Observations;
  std::thread Host([&, In, Out] {
    RawHost H;
    ASSERT_TRUE(H.open(Base));
    ASSERT_TRUE(H.readLine(Handshake));
    ASSERT_TRUE(H.write("{\"mlbridge\":1}\n"));
    FrameHeader Head;
    std::string Payload;
    ASSERT_TRUE(readFrame(H, Head, Payload));
    EXPECT_EQ(Head.Kind, uint32_t(FrameKind::Context));
    ContextName = Payload;
    const Codec &C = getCodec(F);
    for (int I = 0; I < 4; ++I) {
      ASSERT_TRUE(readFrame(H, Head, Payload));
      ASSERT_EQ(Head.Kind, uint32_t(FrameKind::Observation));
      TensorBuffers Got = makeBuffers(In);
      std::optional<uint64_t> Obs;
      ASSERT_OK(C.decode(Payload, Got, &Obs));
      Observations.push_back(Obs.value_or(999));
      if (I == 1) { // a model-side failure: reported, channel stays usable
        ASSERT_TRUE(H.write(frame(FrameKind::Error, "policy raised KeyError")));
        continue;
      }
      // Reply: the same values under the output names.
      TensorBuffers Reply = makeBuffers(Out);
      for (size_t T = 0; T < In.size(); ++T)
        std::memcpy(Reply.data(T), Got.data(T), In[T].byteSize());
      std::string Encoded;
      ASSERT_OK(C.encode(std::nullopt, Reply, Encoded));
      ASSERT_TRUE(H.write(frame(FrameKind::Result, Encoded)));
    }
  });
  ASSERT_OK((*R)->switchContext("my_function"));
  for (uint32_t I = 0; I < 4; ++I) {
    TensorBuffers Expected = makeBuffers(In);
    fillValues(Expected, 100 + I);
    for (size_t T = 0; T < In.size(); ++T)
      std::memcpy((*R)->inputData(T), Expected.data(T), In[T].byteSize());
    Error E = (*R)->evaluate();
    if (I == 1) {
      ASSERT_TRUE(bool(E));
      EXPECT_EQ(E.code(), ErrorCode::ModelFailure);
      EXPECT_NE(E.message().find("policy raised KeyError"), std::string::npos);
      continue;
    }
    ASSERT_OK(E);
    for (size_t T = 0; T < In.size(); ++T)
      EXPECT_EQ(
          std::memcmp((*R)->outputData(T), Expected.data(T), In[T].byteSize()),
          0)
          << Out[T].name();
  }
  R->reset();
  Host.join();
  EXPECT_EQ(ContextName, "my_function");
  EXPECT_EQ(Handshake.rfind(std::string("{\"mlbridge\":1,\"format\":\"") +
                                formatName(F) + "\",\"features\":[",
                            0),
            0u);
  if (F != Format::Bitstream) {
    EXPECT_EQ(Observations, (std::vector<uint64_t>{0, 1, 2, 3}));
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, PipeExtended,
                         ::testing::Values(Format::Bitstream, Format::Json,
                                           Format::Protobuf),
                         [](const auto &Info) {
                           return std::string(formatName(Info.param));
                         });

namespace {
/// Runs a runner against a host that answers the handshake with \p Reply.
Error handshakeWith(const std::string &Reply) {
  auto R = PipeModelRunner::create({TensorSpec::of<int64_t>("a")},
                                   {TensorSpec::of<int64_t>("b")},
                                   extended(Format::Json));
  if (!R)
    return R.takeError();
  std::string Base = (*R)->channelBase();
  std::thread Host([&] {
    RawHost H;
    std::string Line;
    if (H.open(Base) && H.readLine(Line))
      H.write(Reply);
    H.readLine(Line); // wait for the runner to give up
  });
  Error E = (*R)->connect();
  R->reset();
  Host.join();
  return E;
}
} // namespace

TEST(PipeExtendedHandshake, RefusalVersionAndGarbageAreErrors) {
  Error Refused =
      handshakeWith("{\"mlbridge\":1,\"error\":\"unknown feature x\"}\n");
  EXPECT_EQ(Refused.code(), ErrorCode::ModelFailure);
  EXPECT_NE(Refused.message().find("unknown feature x"), std::string::npos);
  Error Version = handshakeWith("{\"mlbridge\":2}\n");
  EXPECT_EQ(Version.code(), ErrorCode::Protocol);
  EXPECT_NE(Version.message().find("version 2"), std::string::npos);
  Error Garbage = handshakeWith("\x01\x02garbage\n");
  EXPECT_EQ(Garbage.code(), ErrorCode::Protocol);
  EXPECT_FALSE(handshakeWith("{\"mlbridge\":1}\n"));
}

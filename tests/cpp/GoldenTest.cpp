//===- GoldenTest.cpp - Cross-language golden vectors ---------------------===//
//
// tests/golden/ is written by the Python package (tools/make_golden_vectors.py,
// using the official protobuf library for the protobuf files). The C++ codecs
// must produce exactly those bytes and decode them back to the raw tensors.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/Codec.h"
#include "mlbridge/TrainingLogWriter.h"

#include "TestHelpers.h"
#include "pipe/FrameHeader.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
const std::string GoldenDir =
    std::string(MLBRIDGE_SOURCE_DIR) + "/tests/golden/";

std::string fromHex(const std::string &Hex) {
  std::string Out;
  for (size_t I = 0; I + 1 < Hex.size(); I += 2)
    Out.push_back(char(std::stoi(Hex.substr(I, 2), nullptr, 16)));
  return Out;
}

struct GoldenCase {
  std::string Name, Context;
  uint64_t Observation;
  std::vector<TensorSpec> Specs;
  std::vector<std::string> Raw;
  std::string Reward;
};

std::vector<GoldenCase> loadCases() {
  auto J = nlohmann::json::parse(readFile(GoldenDir + "cases.json"));
  std::vector<GoldenCase> Cases;
  for (const auto &C : J) {
    GoldenCase G;
    G.Name = C["name"];
    G.Context = C["context"];
    G.Observation = C["observation"];
    for (const auto &T : C["tensors"]) {
      auto Type = parseDType(T["type"].get<std::string>());
      auto S = TensorSpec::create(T["name"], *Type,
                                  T["shape"].get<std::vector<int64_t>>());
      G.Specs.push_back(*S);
      G.Raw.push_back(fromHex(T["hex"]));
    }
    if (C.contains("reward_hex"))
      G.Reward = fromHex(C["reward_hex"]);
    Cases.push_back(std::move(G));
  }
  return Cases;
}

TensorBuffers filled(const GoldenCase &G) {
  TensorBuffers B = makeBuffers(G.Specs);
  for (size_t I = 0; I < G.Raw.size(); ++I) {
    EXPECT_EQ(G.Raw[I].size(), G.Specs[I].byteSize()) << G.Name;
    std::memcpy(B.data(I), G.Raw[I].data(), G.Raw[I].size());
  }
  return B;
}
} // namespace

TEST(Golden, CasesExist) { EXPECT_GE(loadCases().size(), 8u); }

TEST(Golden, EveryCodecEncodesAndDecodesTheGoldenBytes) {
  struct FileKind {
    const char *Suffix;
    Format F;
    bool Reply;
  };
  const FileKind Kinds[] = {{".bitstream.bin", Format::Bitstream, false},
                            {".json.bin", Format::Json, false},
                            {".protobuf.bin", Format::Protobuf, false},
                            {".reply.json.bin", Format::Json, true},
                            {".reply.protobuf.bin", Format::Protobuf, true}};
  for (const GoldenCase &G : loadCases()) {
    TensorBuffers In = filled(G);
    for (const FileKind &K : Kinds) {
      SCOPED_TRACE(G.Name + K.Suffix);
      std::string Golden = readFile(GoldenDir + G.Name + K.Suffix);
      ASSERT_FALSE(Golden.empty() && In.totalBytes() > 0);
      std::string Encoded;
      std::optional<uint64_t> Obs;
      if (!K.Reply)
        Obs = G.Observation;
      ASSERT_OK(getCodec(K.F).encode(Obs, In, Encoded));
      EXPECT_EQ(Encoded, Golden);
      TensorBuffers Out = makeBuffers(G.Specs);
      std::optional<uint64_t> Decoded;
      ASSERT_OK(getCodec(K.F).decode(Golden, Out, &Decoded));
      EXPECT_TRUE(sameBytes(In, Out));
      if (K.F == Format::Json && K.Reply) {
        EXPECT_FALSE(Decoded.has_value()); // a JSON reply carries none
      } else if (K.F != Format::Bitstream) {
        EXPECT_EQ(Decoded.value_or(12345), K.Reply ? 0 : G.Observation);
      }
    }
  }
}

TEST(Golden, TrainingLogWriterProducesTheGoldenLogs) {
  for (const GoldenCase &G : loadCases()) {
    SCOPED_TRACE(G.Name);
    std::string Path = ::testing::TempDir() + "/mlbridge_golden.log";
    std::optional<TensorSpec> Score;
    if (!G.Reward.empty())
      Score = TensorSpec::of<float>("reward");
    {
      ASSERT_EXPECTED(W, TrainingLogWriter::create(Path, G.Specs, Score));
      ASSERT_OK(W->switchContext(G.Context));
      std::vector<const void *> Data;
      for (const std::string &R : G.Raw)
        Data.push_back(R.data());
      ASSERT_OK(W->logObservation(
          Data.data(), G.Reward.empty() ? nullptr : G.Reward.data()));
    }
    EXPECT_EQ(readFile(Path), readFile(GoldenDir + G.Name + ".log.bin"));
    ::unlink(Path.c_str());
  }
}

TEST(Golden, FramesMatch) {
  auto J = nlohmann::json::parse(readFile(GoldenDir + "frames.json"));
  std::string Expected;
  for (const auto &F : J) {
    std::string Payload = fromHex(F["payload_hex"]);
    char Head[FrameHeader::Size];
    FrameHeader::write(Head, uint32_t(Payload.size()),
                       FrameKind(F["kind"].get<uint32_t>()));
    Expected += std::string(Head, sizeof(Head)) + Payload;
  }
  EXPECT_EQ(Expected, readFile(GoldenDir + "frames.bin"));
}

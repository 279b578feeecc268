//===- PipeMlgoTest.cpp - LLVM's interactive protocol, byte for byte ------===//

#include "mlbridge/PipeModelRunner.h"

#include "TestHelpers.h"

#include <cstring>
#include <sys/stat.h>
#include <thread>

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {
PipeOptions quickOptions() {
  PipeOptions O;
  O.OpenTimeout = 20s;
  O.IoTimeout = 20s;
  return O;
}
} // namespace

TEST(PipeMlgo, SpeaksLLVMsInteractiveProtocol) {
  std::vector<TensorSpec> In = {TensorSpec::of<int64_t>("callee_users"),
                                TensorSpec::of<float>("weights", {1, 2})};
  ASSERT_EXPECTED(R, PipeModelRunner::create(
                         In, {TensorSpec::of<int64_t>("inlining_decision")},
                         quickOptions()));
  std::string Base = (*R)->channelBase();
  // FIFOs made by the runner are private.
  struct stat St;
  ASSERT_EQ(::stat((Base + ".in").c_str(), &St), 0);
  EXPECT_TRUE(S_ISFIFO(St.st_mode));
  EXPECT_EQ(St.st_mode & 0777, 0600u);

  std::vector<std::string> Lines;
  std::vector<std::string> Observations;
  std::thread Host([&] {
    RawHost H;
    ASSERT_TRUE(H.open(Base));
    std::string Line, Bytes;
    ASSERT_TRUE(H.readLine(Line)); // header
    Lines.push_back(Line);
    ASSERT_TRUE(H.readLine(Line)); // context
    Lines.push_back(Line);
    for (int I = 0; I < 3; ++I) {
      ASSERT_TRUE(H.readLine(Line));
      Lines.push_back(Line);
      ASSERT_TRUE(H.readExact(8 + 8 + 1, Bytes));
      Observations.push_back(Bytes);
      int64_t Users;
      std::memcpy(&Users, Bytes.data(), 8);
      int64_t Advice = Users * 2;
      ASSERT_TRUE(H.write(std::string(reinterpret_cast<char *>(&Advice), 8)));
    }
    EXPECT_FALSE(H.readLine(Line)); // EOF once the runner is destroyed
  });
  ASSERT_OK((*R)->switchContext(""));
  for (int64_t I = 0; I < 3; ++I) {
    *(*R)->input<int64_t>(0) = 10 + I; // 10 == '\n' must not confuse anyone
    float *W = (*R)->input<float>(1);
    W[0] = 0.5f;
    W[1] = float(I);
    auto Advice = (*R)->evaluate<int64_t>();
    ASSERT_TRUE(bool(Advice)) << Advice.error().toString();
    EXPECT_EQ(*Advice, 2 * (10 + I));
  }
  EXPECT_EQ((*R)->evaluations(), 3u);
  R->reset();
  Host.join();
  ASSERT_EQ(Lines.size(), 5u);
  EXPECT_EQ(
      Lines[0],
      R"({"features":[{"name":"callee_users","type":"int64_t","port":0,"shape":[1]},)"
      R"({"name":"weights","type":"float","port":0,"shape":[1,2]}],)"
      R"("advice":{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}})");
  EXPECT_EQ(Lines[1], R"({"context":""})");
  EXPECT_EQ(Lines[2], R"({"observation":0})");
  EXPECT_EQ(Lines[4], R"({"observation":2})");
  ASSERT_EQ(Observations.size(), 3u);
  float Half = 0.5f, Two = 2.0f;
  int64_t Twelve = 12;
  std::string Expected(reinterpret_cast<char *>(&Twelve), 8);
  Expected.append(reinterpret_cast<char *>(&Half), 4);
  Expected.append(reinterpret_cast<char *>(&Two), 4);
  Expected.push_back('\n');
  EXPECT_EQ(Observations[2], Expected);
}

TEST(PipeMlgo, RequiresExactlyOneOutput) {
  auto R = PipeModelRunner::create(
      {TensorSpec::of<int64_t>("a")},
      {TensorSpec::of<int64_t>("x"), TensorSpec::of<int64_t>("y")},
      quickOptions());
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(R.error().code(), ErrorCode::InvalidArgument);
}

TEST(PipeMlgo, UsesAnExistingChannelAndFloatAdvice) {
  ASSERT_EXPECTED(Channel, FifoChannel::create());
  PipeOptions O = quickOptions();
  O.ChannelBase = Channel->base();
  ASSERT_EXPECTED(
      R, PipeModelRunner::create({TensorSpec::of<int64_t>("li_size")},
                                 {TensorSpec::of<float>("priority")}, O));
  std::thread Host([&] {
    RawHost H;
    ASSERT_TRUE(H.open(Channel->base()));
    std::string Line, Bytes;
    ASSERT_TRUE(H.readLine(Line));
    ASSERT_TRUE(H.readLine(Line));
    ASSERT_TRUE(H.readExact(9, Bytes));
    float P = 1234.5f;
    ASSERT_TRUE(H.write(std::string(reinterpret_cast<char *>(&P), 4)));
  });
  auto P = (*R)->evaluate<float>();
  Host.join();
  ASSERT_TRUE(bool(P)) << P.error().toString();
  EXPECT_EQ(*P, 1234.5f);
}

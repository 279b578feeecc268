//===- PythonHostTest.cpp - C++ runner against the Python host ------------===//
//
// Starts `python -m mlbridge serve` (the package's pipe host) on a channel
// and runs the C++ PipeModelRunner against it in every protocol and format.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include "TestHelpers.h"

#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> serveArgs(const std::string &Base,
                                   const std::string &Function) {
  return {testPython(), "-m", "mlbridge", "serve",
          "--pipe",     Base, "--policy", echoPolicy(Function)};
}

/// Sum of every input byte: the Python "checksum" policy computes the same.
int64_t byteChecksum(ModelRunner &R) {
  int64_t Sum = 0;
  for (size_t I = 0; I < R.numInputs(); ++I) {
    const unsigned char *P = static_cast<const unsigned char *>(R.inputData(I));
    for (size_t B = 0; B < R.inputSpec(I).byteSize(); ++B)
      Sum += P[B];
  }
  return Sum;
}
} // namespace

TEST(PythonHost, MlgoModeAllDTypes) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PipeOptions O;
  O.OpenTimeout = 30s;
  O.IoTimeout = 30s;
  ASSERT_EXPECTED(
      R, PipeModelRunner::create(allDTypeSpecs(),
                                 {TensorSpec::of<int64_t>("advice")}, O));
  ChildProcess Host(serveArgs((*R)->channelBase(), "checksum"));
  ASSERT_TRUE(Host.started());
  ASSERT_OK((*R)->switchContext("f"));
  for (uint32_t Seed = 0; Seed < 50; ++Seed) {
    TensorBuffers V = makeBuffers(allDTypeSpecs());
    fillValues(V, Seed);
    for (size_t I = 0; I < V.size(); ++I)
      std::memcpy((*R)->inputData(I), V.data(I), V.spec(I).byteSize());
    auto Advice = (*R)->evaluate<int64_t>();
    ASSERT_TRUE(bool(Advice)) << Advice.error().toString();
    EXPECT_EQ(*Advice, byteChecksum(**R)) << "seed " << Seed;
  }
  R->reset();
  EXPECT_EQ(Host.wait(), 0);
}

namespace {
class PythonHostExtended : public ::testing::TestWithParam<Format> {};
} // namespace

TEST_P(PythonHostExtended, AllDTypesRoundTripBothWays) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PipeOptions O;
  O.Protocol = PipeProtocol::Extended;
  O.Serialization = GetParam();
  O.OpenTimeout = 30s;
  O.IoTimeout = 30s;
  ASSERT_EXPECTED(
      R, PipeModelRunner::create(allDTypeSpecs(), allDTypeSpecs("_out"), O));
  ChildProcess Host(serveArgs((*R)->channelBase(), "echo"));
  ASSERT_TRUE(Host.started());
  expectEchoRoundTrips(**R, 30);
  R->reset();
  EXPECT_EQ(Host.wait(), 0);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, PythonHostExtended,
                         ::testing::Values(Format::Bitstream, Format::Json,
                                           Format::Protobuf),
                         [](const auto &Info) {
                           return std::string(formatName(Info.param));
                         });

TEST(PythonHost, PolicyExceptionBecomesModelFailure) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PipeOptions O;
  O.Protocol = PipeProtocol::Extended;
  O.Serialization = Format::Json;
  O.OpenTimeout = 30s;
  O.IoTimeout = 30s;
  ASSERT_EXPECTED(R,
                  PipeModelRunner::create({TensorSpec::of<int64_t>("x")},
                                          {TensorSpec::of<int64_t>("y")}, O));
  ChildProcess Host(serveArgs((*R)->channelBase(), "fail_on_negative"));
  *(*R)->input<int64_t>(0) = -1;
  Error E = (*R)->evaluate();
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::ModelFailure);
  EXPECT_NE(E.message().find("negative input"), std::string::npos)
      << E.toString();
  *(*R)->input<int64_t>(0) = 20;
  auto Y = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 21);
}

TEST(PythonHost, HostKilledMidCallIsPeerClosed) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PipeOptions O;
  O.OpenTimeout = 30s;
  O.IoTimeout = 20s;
  ASSERT_EXPECTED(R,
                  PipeModelRunner::create({TensorSpec::of<int64_t>("x")},
                                          {TensorSpec::of<int64_t>("y")}, O));
  ChildProcess Host(serveArgs((*R)->channelBase(), "slow"));
  ASSERT_OK((*R)->connect());
  std::thread Killer([&] {
    std::this_thread::sleep_for(500ms);
    Host.kill(SIGKILL);
  });
  Error E = (*R)->evaluate();
  Killer.join();
  ASSERT_TRUE(bool(E));
  // PeerClosed, not Timeout: the death is noticed at once, not at the
  // 20 s deadline.
  EXPECT_EQ(E.code(), ErrorCode::PeerClosed) << E.toString();
}

namespace {
/// The shared-memory protocol, spinning at most GetParam() microseconds.
class PythonHostShared : public ::testing::TestWithParam<int> {
protected:
  PipeOptions options(std::chrono::milliseconds IoTimeout = 30s) const {
    PipeOptions O;
    O.Protocol = PipeProtocol::SharedMemory;
    O.SpinMicros = std::chrono::microseconds(GetParam());
    O.OpenTimeout = 30s;
    O.IoTimeout = IoTimeout;
    return O;
  }
  /// A runner sending int64 x, answered by int64 y.
  Expected<std::unique_ptr<PipeModelRunner>>
  scalarRunner(std::chrono::milliseconds IoTimeout = 30s) const {
    return PipeModelRunner::create({TensorSpec::of<int64_t>("x")},
                                   {TensorSpec::of<int64_t>("y")},
                                   options(IoTimeout));
  }
};
} // namespace

TEST_P(PythonHostShared, AllDTypesRoundTripBothWays) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  ASSERT_EXPECTED(R, PipeModelRunner::create(allDTypeSpecs(),
                                             allDTypeSpecs("_out"), options()));
  ChildProcess Host(serveArgs((*R)->channelBase(), "echo"));
  ASSERT_TRUE(Host.started());
  expectEchoRoundTrips(**R, 200);
  R->reset(); // the host sees EOF on its doorbell
  EXPECT_EQ(Host.wait(), 0);
}

TEST_P(PythonHostShared, ContextsAndModelFailures) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  ASSERT_EXPECTED(R, scalarRunner());
  ChildProcess Host(serveArgs((*R)->channelBase(), "context_plus_x"));
  auto Decide = [&](int64_t X) {
    *(*R)->input<int64_t>(0) = X;
    return (*R)->evaluate<int64_t>();
  };
  ASSERT_OK((*R)->switchContext("abc"));
  auto Y = Decide(1);
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 4);
  ASSERT_OK((*R)->switchContext(""));
  Y = Decide(2);
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 2);
  // A policy failure fails that call only: the channel stays in step.
  Error E = Decide(-1).takeError();
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::ModelFailure) << E.toString();
  EXPECT_NE(E.message().find("ValueError: negative input"), std::string::npos)
      << E.toString();
  ASSERT_OK((*R)->switchContext("hello"));
  Y = Decide(5);
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 10);
  // A name over the message area is refused before anything is written.
  Error Long = (*R)->switchContext(std::string(70000, 'n'));
  EXPECT_EQ(Long.code(), ErrorCode::TooLarge) << Long.toString();
  Y = Decide(7);
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 12);
  R->reset();
  EXPECT_EQ(Host.wait(), 0);
}

TEST_P(PythonHostShared, AHostThatStartsLateStillSeesTheFirstRequest) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  ASSERT_EXPECTED(R, scalarRunner(20s));
  ChildProcess Host(serveArgs((*R)->channelBase(), "slow_start"));
  *(*R)->input<int64_t>(0) = 41; // published while the host is in begin()
  auto Y = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 42);
  R->reset();
  EXPECT_EQ(Host.wait(), 0);
}

TEST_P(PythonHostShared, HostKilledMidCallIsPeerClosed) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  ASSERT_EXPECTED(R, scalarRunner(20s));
  ChildProcess Host(serveArgs((*R)->channelBase(), "slow"));
  ASSERT_OK((*R)->connect());
  std::thread Killer([&] {
    std::this_thread::sleep_for(500ms);
    Host.kill(SIGKILL);
  });
  Error E = (*R)->evaluate();
  Killer.join();
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::PeerClosed) << E.toString();
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
}

TEST_P(PythonHostShared, AStalledHostTimesOut) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  ASSERT_EXPECTED(R, scalarRunner(300ms));
  ChildProcess Host(serveArgs((*R)->channelBase(), "slow"));
  Error E = (*R)->evaluate();
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::Timeout) << E.toString();
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
  Host.kill(SIGKILL);
}

INSTANTIATE_TEST_SUITE_P(Spin, PythonHostShared, ::testing::Values(0, 50),
                         [](const auto &Info) {
                           return "spin" + std::to_string(Info.param) + "us";
                         });

//===- GrpcRunnerTest.cpp - C++ gRPC runner against the Python server -----===//
//
// Starts `python -m mlbridge serve --grpc unix:...` and runs GrpcModelRunner
// against it, unary and streaming; then the faults: policy errors, a server
// that never starts, a server killed mid-session.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/GrpcModelRunner.h"

#include "TestHelpers.h"

#include <arpa/inet.h>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {
/// A Python model server on a private unix socket.
struct PythonServer {
  SocketDir Socket;
  std::string Address = Socket.address();
  std::unique_ptr<ChildProcess> Process;
  explicit PythonServer(const std::string &Function)
      : Process(std::make_unique<ChildProcess>(std::vector<std::string>{
            testPython(), "-m", "mlbridge", "serve", "--grpc", Address,
            "--policy", echoPolicy(Function)})) {}
};

GrpcOptions options(const std::string &Target, GrpcMode Mode) {
  GrpcOptions O;
  O.Target = Target;
  O.Mode = Mode;
  O.ConnectTimeout = 60s; // the Python server may take a while to start
  O.CallTimeout = 20s;
  return O;
}

class GrpcRunner : public ::testing::TestWithParam<GrpcMode> {};
} // namespace

TEST_P(GrpcRunner, AllDTypesRoundTripBothWays) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PythonServer Server("echo");
  ASSERT_EXPECTED(
      R, GrpcModelRunner::create(allDTypeSpecs(), allDTypeSpecs("_out"),
                                 options(Server.Address, GetParam())));
  ASSERT_OK((*R)->switchContext("f"));
  expectEchoRoundTrips(**R, 30);
  EXPECT_EQ((*R)->evaluations(), 30u);
}

TEST_P(GrpcRunner, PolicyErrorFailsOnlyThatCall) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PythonServer Server("fail_on_negative");
  ASSERT_EXPECTED(R,
                  GrpcModelRunner::create({TensorSpec::of<int64_t>("x")},
                                          {TensorSpec::of<int64_t>("y")},
                                          options(Server.Address, GetParam())));
  *(*R)->input<int64_t>(0) = -1;
  Error E = (*R)->evaluate();
  EXPECT_EQ(E.code(), ErrorCode::ModelFailure) << E.toString();
  EXPECT_NE(E.message().find("negative input"), std::string::npos);
  *(*R)->input<int64_t>(0) = 41;
  auto Y = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 42);
}

TEST_P(GrpcRunner, ServerNeverStartedIsATimeout) {
  GrpcOptions O =
      options("unix:/tmp/mlbridge-no-such-dir/none.sock", GetParam());
  O.ConnectTimeout = 300ms;
  ASSERT_EXPECTED(R,
                  GrpcModelRunner::create({TensorSpec::of<int64_t>("x")},
                                          {TensorSpec::of<int64_t>("y")}, O));
  Error E = (*R)->evaluate();
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::Timeout) << E.toString();
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
}

TEST_P(GrpcRunner, ServerKilledMidSessionIsAnErrorThenBroken) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PythonServer Server("echo");
  GrpcOptions O = options(Server.Address, GetParam());
  O.CallTimeout = 5s;
  ASSERT_EXPECTED(R, GrpcModelRunner::create({TensorSpec::of<int64_t>("x")},
                                             {TensorSpec::of<int64_t>("x_out")},
                                             O));
  *(*R)->input<int64_t>(0) = 7;
  auto First = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(First)) << First.error().toString();
  Server.Process->kill(SIGKILL);
  Error E = (*R)->evaluate();
  ASSERT_TRUE(bool(E));
  // Noticed as a closed peer (or, at worst, at the call deadline); never a
  // hang or a crash, and the runner then fails fast.
  EXPECT_TRUE(E.code() == ErrorCode::PeerClosed ||
              E.code() == ErrorCode::Timeout)
      << E.toString();
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, GrpcRunner, ::testing::Values(GrpcMode::Unary, GrpcMode::Streaming),
    [](const auto &Info) {
      return std::string(Info.param == GrpcMode::Unary ? "unary" : "streaming");
    });

TEST(GrpcRunnerDeadline, SlowServerPastTheDeadlineIsATimeout) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  for (GrpcMode Mode : {GrpcMode::Unary, GrpcMode::Streaming}) {
    PythonServer Server("slow"); // sleeps 60 s per decision
    GrpcOptions O = options(Server.Address, Mode);
    O.CallTimeout = 500ms;
    ASSERT_EXPECTED(R,
                    GrpcModelRunner::create({TensorSpec::of<int64_t>("x")},
                                            {TensorSpec::of<int64_t>("y")}, O));
    ASSERT_OK((*R)->connect());
    Error E = (*R)->evaluate();
    EXPECT_EQ(E.code(), ErrorCode::Timeout) << E.toString();
    EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
  }
}

TEST(GrpcRunnerLimits, OversizedMessageIsRejected) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  PythonServer Server("echo");
  GrpcOptions O = options(Server.Address, GrpcMode::Unary);
  O.MaxMessageBytes = 1024; // the client refuses to send more
  ASSERT_EXPECTED(R, GrpcModelRunner::create(
                         {TensorSpec::of<uint8_t>("big", {4096})},
                         {TensorSpec::of<uint8_t>("big_out", {4096})}, O));
  Error E = (*R)->evaluate();
  EXPECT_EQ(E.code(), ErrorCode::TooLarge) << E.toString();
}

namespace {
/// A free loopback TCP port (bound and released).
int freePort() {
  int S = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in A{};
  A.sin_family = AF_INET;
  A.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t L = sizeof(A);
  ::bind(S, reinterpret_cast<sockaddr *>(&A), sizeof(A));
  ::getsockname(S, reinterpret_cast<sockaddr *>(&A), &L);
  ::close(S);
  return ntohs(A.sin_port);
}
} // namespace

TEST(GrpcRunnerTls, MutualTlsOverTcp) {
  std::string Certs = makeTestCertificates("mlbridge-certs");
  if (!havePython() || Certs.empty())
    GTEST_SKIP() << "needs Python and openssl";
  std::string Target = "127.0.0.1:" + std::to_string(freePort());
  ChildProcess Server({testPython(), "-m", "mlbridge", "serve", "--grpc",
                       Target, "--policy", echoPolicy("fail_on_negative"),
                       "--tls-cert", Certs + "/server.pem", "--tls-key",
                       Certs + "/server.key", "--tls-client-ca",
                       Certs + "/ca.pem"});
  GrpcOptions O = options(Target, GrpcMode::Unary);
  O.TlsRootCertificates = readFile(Certs + "/ca.pem");
  O.TlsClientCertificate = readFile(Certs + "/client.pem");
  O.TlsClientKey = readFile(Certs + "/client.key");
  ASSERT_EXPECTED(R,
                  GrpcModelRunner::create({TensorSpec::of<int64_t>("x")},
                                          {TensorSpec::of<int64_t>("y")}, O));
  *(*R)->input<int64_t>(0) = 1;
  auto Y = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 2);

  // Without a client certificate the server refuses the session.
  GrpcOptions NoCert = options(Target, GrpcMode::Unary);
  NoCert.ConnectTimeout = 2s;
  NoCert.TlsRootCertificates = O.TlsRootCertificates;
  ASSERT_EXPECTED(Anonymous, GrpcModelRunner::create(
                                 {TensorSpec::of<int64_t>("x")},
                                 {TensorSpec::of<int64_t>("y")}, NoCert));
  EXPECT_TRUE(bool((*Anonymous)->evaluate()));
}

TEST(GrpcRunnerCancel, CancelFromAnotherThreadEndsTheCall) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  for (GrpcMode Mode : {GrpcMode::Unary, GrpcMode::Streaming}) {
    PythonServer Server("slow"); // would answer after 60 s
    GrpcOptions O = options(Server.Address, Mode);
    O.CallTimeout = 120s;
    ASSERT_EXPECTED(R,
                    GrpcModelRunner::create({TensorSpec::of<int64_t>("x")},
                                            {TensorSpec::of<int64_t>("y")}, O));
    ASSERT_OK((*R)->connect());
    std::thread Watchdog([&] {
      std::this_thread::sleep_for(300ms);
      (*R)->cancel();
    });
    Error E = (*R)->evaluate();
    Watchdog.join();
    // Cancelled, not timed out: the 120 s deadline was never reached.
    EXPECT_EQ(E.code(), ErrorCode::PeerClosed) << E.toString();
    EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
  }
}

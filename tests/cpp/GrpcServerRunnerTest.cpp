//===- GrpcServerRunnerTest.cpp - Compiler as server, Python driver -------===//
//
// GrpcServerModelRunner listens; `python -m mlbridge drive` connects and
// makes the decisions (the Python-client-to-C++-server direction).
//
//===----------------------------------------------------------------------===//

#include "mlbridge/GrpcServerModelRunner.h"

#include "TestHelpers.h"

#include <csignal>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {
GrpcServerOptions options(const std::string &Address) {
  GrpcServerOptions O;
  O.Address = Address;
  O.ConnectTimeout = 60s; // the Python driver may take a while to start
  O.CallTimeout = 20s;
  return O;
}

std::unique_ptr<ChildProcess> startDriver(const std::string &Address,
                                          const std::string &Function) {
  return std::make_unique<ChildProcess>(std::vector<std::string>{
      testPython(), "-m", "mlbridge", "drive", "--grpc", Address, "--policy",
      echoPolicy(Function)});
}
} // namespace

TEST(GrpcServerRunner, PythonDriverDecidesAllDTypes) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  SocketDir D;
  ASSERT_EXPECTED(R, GrpcServerModelRunner::create(allDTypeSpecs(),
                                                   allDTypeSpecs("_out"),
                                                   options(D.address())));
  struct stat St;
  ASSERT_EQ(::stat(D.path().c_str(), &St), 0);
  EXPECT_EQ(St.st_mode & 0777, 0600u);
  auto Driver = startDriver((*R)->address(), "echo");
  ASSERT_OK((*R)->switchContext("f"));
  expectEchoRoundTrips(**R, 30);
  // A clean, programmatic shutdown ends the driver normally.
  (*R)->shutdown();
  EXPECT_EQ(Driver->wait(), 0);
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
}

TEST(GrpcServerRunner, PolicyErrorFailsOnlyThatCall) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  SocketDir D;
  ASSERT_EXPECTED(R, GrpcServerModelRunner::create(
                         {TensorSpec::of<int64_t>("x")},
                         {TensorSpec::of<int64_t>("y")}, options(D.address())));
  auto Driver = startDriver((*R)->address(), "fail_on_negative");
  *(*R)->input<int64_t>(0) = -3;
  Error E = (*R)->evaluate();
  EXPECT_EQ(E.code(), ErrorCode::ModelFailure) << E.toString();
  EXPECT_NE(E.message().find("negative input"), std::string::npos);
  *(*R)->input<int64_t>(0) = 9;
  auto Y = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 10);
}

TEST(GrpcServerRunner, NoDriverIsATimeout) {
  SocketDir D;
  GrpcServerOptions O = options(D.address());
  O.ConnectTimeout = 200ms;
  ASSERT_EXPECTED(
      R, GrpcServerModelRunner::create({TensorSpec::of<int64_t>("x")},
                                       {TensorSpec::of<int64_t>("y")}, O));
  Error E = (*R)->evaluate();
  EXPECT_EQ(E.code(), ErrorCode::Timeout) << E.toString();
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
}

TEST(GrpcServerRunner, DriverKilledMidSessionIsAnErrorThenBroken) {
  if (!havePython())
    GTEST_SKIP() << "no Python at " << testPython();
  SocketDir D;
  GrpcServerOptions O = options(D.address());
  O.CallTimeout = 10s;
  ASSERT_EXPECTED(
      R, GrpcServerModelRunner::create({TensorSpec::of<int64_t>("x")},
                                       {TensorSpec::of<int64_t>("x_out")}, O));
  auto Driver = startDriver((*R)->address(), "echo");
  *(*R)->input<int64_t>(0) = 5;
  auto First = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(First)) << First.error().toString();
  EXPECT_EQ(*First, 5);
  Driver->kill(SIGKILL);
  Error E = (*R)->evaluate();
  ASSERT_TRUE(bool(E));
  EXPECT_TRUE(E.code() == ErrorCode::PeerClosed ||
              E.code() == ErrorCode::Timeout)
      << E.toString();
  EXPECT_EQ((*R)->evaluate().code(), ErrorCode::Broken);
}

TEST(GrpcServerRunner, NonLoopbackNeedsTheExplicitOption) {
  auto R = GrpcServerModelRunner::create({TensorSpec::of<int64_t>("x")},
                                         {TensorSpec::of<int64_t>("y")},
                                         options("0.0.0.0:0"));
  ASSERT_FALSE(bool(R));
  EXPECT_NE(R.error().message().find("not a loopback"), std::string::npos);
  EXPECT_FALSE(checkListenAddress("127.0.0.1:0", false));
  EXPECT_FALSE(checkListenAddress("[::1]:5000", false));
  EXPECT_FALSE(checkListenAddress("0.0.0.0:5000", true));
  EXPECT_TRUE(bool(checkListenAddress("example.org:5000", false)));
  EXPECT_TRUE(bool(checkListenAddress("nonsense", false)));
}

TEST(GrpcServerRunner, TcpLoopbackPortZeroReportsTheRealPort) {
  ASSERT_EXPECTED(R,
                  GrpcServerModelRunner::create({TensorSpec::of<int64_t>("x")},
                                                {TensorSpec::of<int64_t>("y")},
                                                options("127.0.0.1:0")));
  EXPECT_EQ((*R)->address().rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE((*R)->address(), "127.0.0.1:0");
}

TEST(GrpcServerRunner, MutualTlsWithAPythonDriver) {
  std::string Certs = makeTestCertificates("mlbridge-server-certs");
  if (!havePython() || Certs.empty())
    GTEST_SKIP() << "needs Python and openssl";
  GrpcServerOptions O = options("127.0.0.1:0");
  O.TlsCertificate = readFile(Certs + "/server.pem");
  O.TlsKey = readFile(Certs + "/server.key");
  O.TlsClientCA = readFile(Certs + "/ca.pem");
  ASSERT_EXPECTED(
      R, GrpcServerModelRunner::create({TensorSpec::of<int64_t>("x")},
                                       {TensorSpec::of<int64_t>("y")}, O));
  ChildProcess Driver({testPython(), "-m", "mlbridge", "drive", "--grpc",
                       (*R)->address(), "--policy",
                       echoPolicy("fail_on_negative"), "--tls-ca",
                       Certs + "/ca.pem", "--tls-cert", Certs + "/client.pem",
                       "--tls-key", Certs + "/client.key"});
  *(*R)->input<int64_t>(0) = 99;
  auto Y = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(Y)) << Y.error().toString();
  EXPECT_EQ(*Y, 100);
  (*R)->shutdown();
  EXPECT_EQ(Driver.wait(), 0);
}

//===- TestHelpers.cpp - Shared test utilities ----------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include "codec/DTypeDispatch.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <poll.h>
#include <pthread.h>
#include <random>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace mlbridge {
namespace test {

std::vector<TensorSpec> allDTypeSpecs(const std::string &Suffix) {
  std::vector<TensorSpec> Specs;
  std::vector<std::vector<int64_t>> Shapes = {
      {1}, {}, {7}, {2, 3}, {2, 3, 4}, {1, 33}, {5}, {3, 1}, {1}, {4}};
  for (int I = 0; I < NumDTypes; ++I) {
    auto S = TensorSpec::create(
        std::string("t_") + dtypeName(DType(I)) + Suffix, DType(I), Shapes[I]);
    Specs.push_back(*S);
  }
  return Specs;
}

namespace {
template <typename T> void fillTyped(void *Data, size_t N, std::mt19937_64 &R) {
  T *P = static_cast<T *>(Data);
  for (size_t I = 0; I < N; ++I) {
    if constexpr (std::is_floating_point<T>::value) {
      std::uniform_real_distribution<double> Mant(-1.0, 1.0);
      std::uniform_int_distribution<int> Exp(-30, 30);
      P[I] = T(std::ldexp(Mant(R), Exp(R)));
      if (I == 1)
        P[I] = std::numeric_limits<T>::max();
      if (I == 2)
        P[I] = -T(0.0);
      if (I == 3)
        P[I] = std::numeric_limits<T>::denorm_min();
    } else {
      P[I] = T(R());
      if (I == 1)
        P[I] = std::numeric_limits<T>::min();
      if (I == 2)
        P[I] = std::numeric_limits<T>::max();
    }
  }
}
} // namespace

namespace {
struct Filler {
  template <typename T>
  void operator()(void *Data, size_t N, std::mt19937_64 &R) const {
    fillTyped<T>(Data, N, R);
  }
};
} // namespace

void fillValues(TensorBuffers &B, uint32_t Seed) {
  std::mt19937_64 R(Seed);
  for (size_t I = 0; I < B.size(); ++I)
    dispatchDType(B.spec(I).type(), Filler(), B.data(I),
                  B.spec(I).elementCount(), R);
}

bool sameBytes(const TensorBuffers &A, const TensorBuffers &B) {
  if (A.size() != B.size())
    return false;
  for (size_t I = 0; I < A.size(); ++I)
    if (A.spec(I).byteSize() != B.spec(I).byteSize() ||
        std::memcmp(A.data(I), B.data(I), A.spec(I).byteSize()) != 0)
      return false;
  return true;
}

TensorBuffers makeBuffers(std::vector<TensorSpec> Specs) {
  auto B = TensorBuffers::create(std::move(Specs), "test");
  if (!B) {
    ADD_FAILURE() << B.error().toString();
    return TensorBuffers();
  }
  return std::move(*B);
}

void expectEchoRoundTrips(ModelRunner &R, uint32_t Rounds) {
  for (uint32_t Seed = 0; Seed < Rounds; ++Seed) {
    TensorBuffers V = makeBuffers(allDTypeSpecs());
    fillValues(V, Seed);
    for (size_t I = 0; I < V.size(); ++I)
      std::memcpy(R.inputData(I), V.data(I), V.spec(I).byteSize());
    Error E = R.evaluate();
    ASSERT_FALSE(E) << E.toString() << " (seed " << Seed << ")";
    for (size_t I = 0; I < V.size(); ++I)
      ASSERT_EQ(std::memcmp(R.outputData(I), V.data(I), V.spec(I).byteSize()),
                0)
          << R.outputSpec(I).name() << " seed " << Seed;
  }
}

std::string readFile(const std::string &Path) {
  std::ifstream F(Path, std::ios::binary);
  std::stringstream S;
  S << F.rdbuf();
  return S.str();
}

const std::string &testPython() {
  static const std::string Path = MLBRIDGE_TEST_PYTHON;
  return Path;
}

bool havePython() { return ::access(testPython().c_str(), X_OK) == 0; }

std::string echoPolicy(const std::string &Function) {
  return std::string(MLBRIDGE_SOURCE_DIR) +
         "/tests/cpp/policies/echo.py:" + Function;
}

std::string makeTestCertificates(const std::string &Name) {
  if (::access("/usr/bin/openssl", X_OK) != 0)
    return "";
  std::string Dir = ::testing::TempDir() + "/" + Name;
  std::string Make = std::string(MLBRIDGE_SOURCE_DIR) +
                     "/tests/tls/make_certs.sh " + Dir + " > /dev/null";
  return std::system(Make.c_str()) == 0 ? Dir : "";
}

SocketDir::SocketDir() {
  char Template[] = "/tmp/mlbridge-test-XXXXXX";
  const char *Made = ::mkdtemp(Template);
  Dir = Made ? Made : "/nonexistent";
}

SocketDir::~SocketDir() {
  ::unlink(path().c_str());
  ::rmdir(Dir.c_str());
}

ChildProcess::ChildProcess(const std::vector<std::string> &Args) {
  std::vector<char *> Argv;
  for (const std::string &A : Args)
    Argv.push_back(const_cast<char *>(A.c_str()));
  Argv.push_back(nullptr);
  pid_t P;
  if (posix_spawn(&P, Argv[0], nullptr, nullptr, Argv.data(), environ) == 0)
    Pid = P;
}

void ChildProcess::kill(int Sig) {
  if (Pid > 0) {
    ::kill(Pid, Sig);
    wait();
  }
}

int ChildProcess::wait() {
  int Status = 0;
  if (Pid > 0)
    waitpid(Pid, &Status, 0);
  Pid = -1;
  return Status;
}

bool RawHost::open(const std::string &Base, std::chrono::milliseconds Timeout) {
  auto Until = std::chrono::steady_clock::now() + Timeout;
  // This thread must survive writing to a runner that went away.
  sigset_t Set;
  sigemptyset(&Set);
  sigaddset(&Set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &Set, nullptr);
  // LLVM's order: BASE.in for writing (needs the compiler reading it).
  while ((In = ::open((Base + ".in").c_str(), O_WRONLY | O_NONBLOCK)) < 0) {
    if (errno != ENXIO || std::chrono::steady_clock::now() > Until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Out = ::open((Base + ".out").c_str(), O_RDONLY | O_NONBLOCK);
  if (Out < 0)
    return false;
  // Blocking writes from here on.
  fcntl(In, F_SETFL, fcntl(In, F_GETFL) & ~O_NONBLOCK);
  return true;
}

RawHost::~RawHost() { close(); }

void RawHost::close() {
  if (In >= 0)
    ::close(In);
  if (Out >= 0)
    ::close(Out);
  In = Out = -1;
}

bool RawHost::waitReadable() {
  struct pollfd P = {Out, POLLIN, 0};
  if (::poll(&P, 1, 20000) <= 0)
    return false;
  char Buf[65536];
  ssize_t N = ::read(Out, Buf, sizeof(Buf));
  if (N <= 0)
    return false;
  Pending.append(Buf, size_t(N));
  return true;
}

bool RawHost::readLine(std::string &Line) {
  size_t NL;
  while ((NL = Pending.find('\n')) == std::string::npos)
    if (!waitReadable())
      return false;
  Line = Pending.substr(0, NL);
  Pending.erase(0, NL + 1);
  return true;
}

bool RawHost::readExact(size_t N, std::string &Bytes) {
  while (Pending.size() < N)
    if (!waitReadable())
      return false;
  Bytes = Pending.substr(0, N);
  Pending.erase(0, N);
  return true;
}

bool RawHost::write(const std::string &Bytes) {
  size_t Done = 0;
  while (Done < Bytes.size()) {
    ssize_t N = ::write(In, Bytes.data() + Done, Bytes.size() - Done);
    if (N <= 0)
      return false;
    Done += size_t(N);
  }
  return true;
}

} // namespace test
} // namespace mlbridge

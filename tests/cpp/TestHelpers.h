//===- TestHelpers.h - Shared test utilities --------------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TESTS_TESTHELPERS_H
#define MLBRIDGE_TESTS_TESTHELPERS_H

#include "mlbridge/ModelRunner.h"
#include "mlbridge/TensorBuffers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace mlbridge {
namespace test {

/// Fails the test with the error's text unless \p E is success.
#define ASSERT_OK(E)                                                           \
  do {                                                                         \
    ::mlbridge::Error Err_ = (E);                                              \
    ASSERT_FALSE(Err_) << Err_.toString();                                     \
  } while (0)

/// Unwraps an Expected or fails the test.
#define ASSERT_EXPECTED(Var, Expr)                                             \
  auto Var = (Expr);                                                           \
  ASSERT_TRUE(bool(Var)) << Var.error().toString()

/// One spec per dtype, with scalar, vector and N-d shapes.
std::vector<TensorSpec> allDTypeSpecs(const std::string &Suffix = "");

/// Fills every tensor with deterministic, finite values of its type.
void fillValues(TensorBuffers &B, uint32_t Seed);

/// True when both hold the same bytes for every tensor.
bool sameBytes(const TensorBuffers &A, const TensorBuffers &B);

/// Makes buffers for \p Specs or fails the test (via ADD_FAILURE).
TensorBuffers makeBuffers(std::vector<TensorSpec> Specs);

/// Feeds \p Rounds sets of allDTypeSpecs() values to \p R (whose outputs
/// are allDTypeSpecs("_out") served by an echoing model) and checks every
/// output byte for byte.
void expectEchoRoundTrips(ModelRunner &R, uint32_t Rounds);

/// Reads a whole file as bytes.
std::string readFile(const std::string &Path);

/// Heap allocations made so far by the calling thread (counted by the
/// test binary's operator new, see AllocationTest.cpp).
uint64_t threadAllocations();

/// The Python interpreter with the mlbridge package (MLBRIDGE_TEST_PYTHON).
const std::string &testPython();
/// True when testPython() is executable.
bool havePython();

/// "tests/cpp/policies/echo.py:Function", the policies the Python hosts
/// serve in the cross-language tests.
std::string echoPolicy(const std::string &Function);

/// Makes throwaway TLS certificates (tests/tls/make_certs.sh) in a fresh
/// directory named after \p Name; returns it, or "" when openssl is missing
/// or fails.
std::string makeTestCertificates(const std::string &Name);

/// A private temporary directory holding one unix socket; removed (with the
/// socket) on destruction.
class SocketDir {
public:
  SocketDir();
  ~SocketDir();
  SocketDir(const SocketDir &) = delete;
  SocketDir &operator=(const SocketDir &) = delete;
  /// The socket's path.
  std::string path() const { return Dir + "/socket"; }
  /// The gRPC address of the socket ("unix:" + path()).
  std::string address() const { return "unix:" + path(); }

private:
  std::string Dir;
};

/// A child process started with posix_spawn; killed and reaped on
/// destruction.
class ChildProcess {
public:
  /// Starts Args[0] (a path) with the arguments.
  explicit ChildProcess(const std::vector<std::string> &Args);
  ~ChildProcess() { kill(9); }
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;
  /// Sends \p Sig and reaps the child.
  void kill(int Sig);
  /// Waits for the child; returns its wait status.
  int wait();
  /// True when the child was started and not reaped.
  bool started() const { return Pid > 0; }

private:
  int Pid = -1;
};

/// A minimal, independent implementation of the model side of a pipe
/// channel, with raw syscalls and its own deadlines, running on a thread.
class RawHost {
public:
  /// Opens the channel at \p Base in LLVM's order (BASE.in for writing, then
  /// BASE.out for reading), waiting at most \p Timeout.
  bool open(const std::string &Base,
            std::chrono::milliseconds Timeout = std::chrono::seconds(20));
  ~RawHost();
  /// Reads one line without '\n'; false on EOF/timeout.
  bool readLine(std::string &Line);
  /// Reads exactly \p N bytes; false on EOF/timeout.
  bool readExact(size_t N, std::string &Out);
  /// Writes all bytes; false on error.
  bool write(const std::string &Bytes);
  /// Closes both ends (as if the process died).
  void close();

private:
  bool waitReadable();
  int In = -1, Out = -1; // In: we write BASE.in; Out: we read BASE.out.
  std::string Pending;
};

} // namespace test
} // namespace mlbridge

#endif // MLBRIDGE_TESTS_TESTHELPERS_H

//===- llvm/PhaseWorker.cpp - Training commands in a child process --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PhaseWorker.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <type_traits>
#include <unistd.h>

namespace mlbridge::phase {

namespace {

struct Request {
  int64_t Command, Arg;
};

/// One reply datagram: the observation, then the context's bytes.
struct ReplyHead {
  Observation Obs;
  uint32_t End;
  uint32_t ContextLength;
};
static_assert(std::is_trivially_copyable_v<ReplyHead>);

constexpr size_t MaxReply = sizeof(ReplyHead) + PhaseWorker::MaxContextBytes;

/// Sends one datagram (whole, or false).
bool sendAll(int Socket, const void *Data, size_t Size) {
  ssize_t N;
  do
    N = ::send(Socket, Data, Size, MSG_NOSIGNAL);
  while (N < 0 && errno == EINTR);
  return N == ssize_t(Size);
}

/// Receives one datagram; 0 at EOF, -1 on error.
ssize_t receive(int Socket, void *Data, size_t Size) {
  ssize_t N;
  do
    N = ::recv(Socket, Data, Size, 0);
  while (N < 0 && errno == EINTR);
  return N;
}

/// How the child at \p Status ended, in words.
std::string describeEnd(int Status) {
  if (WIFSIGNALED(Status))
    return "LLVM crashed (signal " + std::to_string(WTERMSIG(Status)) + ", " +
           strsignal(WTERMSIG(Status)) + ")";
  if (WIFEXITED(Status))
    return "the worker exited with status " +
           std::to_string(WEXITSTATUS(Status));
  return "the worker ended";
}

} // namespace

PhaseWorker::PhaseWorker(Handler Run, std::chrono::milliseconds Timeout)
    : Run(std::move(Run)), Timeout(Timeout) {}

PhaseWorker::~PhaseWorker() { stop(); }

Error PhaseWorker::start() {
  int Pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, Pair) != 0)
    return makeError(ErrorCode::IO,
                     "cannot make the worker's socket: ", std::strerror(errno));
  pid_t Parent = ::getpid();
  pid_t Child = ::fork();
  if (Child < 0) {
    int Errno = errno;
    ::close(Pair[0]);
    ::close(Pair[1]);
    return makeError(ErrorCode::IO,
                     "cannot fork the worker: ", std::strerror(Errno));
  }
  if (Child == 0) {
    ::close(Pair[0]);
    // The worker dies with the service, whatever kills the service.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != Parent)
      ::_exit(0);
    serve(Pair[1]);
  }
  ::close(Pair[1]);
  Pid = Child;
  Socket = Pair[0];
  return Error::success();
}

void PhaseWorker::serve(int Sock) {
  // Only this thread exists here; the parent's runner, its threads and its
  // descriptors are not touched. _exit: no destructor of the parent's
  // objects runs twice.
  std::string Buffer(MaxReply, '\0');
  for (;;) {
    Request Req;
    if (receive(Sock, &Req, sizeof(Req)) != ssize_t(sizeof(Req)))
      ::_exit(0); // the service is gone, or stopped us
    WorkerReply R = Run(Req.Command, Req.Arg);
    ReplyHead Head{R.Obs, R.End ? 1u : 0u,
                   uint32_t(std::min(R.Context.size(), MaxContextBytes))};
    std::memcpy(&Buffer[0], &Head, sizeof(Head));
    std::memcpy(&Buffer[sizeof(Head)], R.Context.data(), Head.ContextLength);
    if (!sendAll(Sock, Buffer.data(), sizeof(Head) + Head.ContextLength) ||
        R.End)
      ::_exit(0);
  }
}

void PhaseWorker::stop() {
  if (Socket >= 0)
    ::close(Socket);
  Socket = -1;
  if (Pid > 0) {
    ::kill(Pid, SIGKILL);
    while (::waitpid(Pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  Pid = -1;
}

Expected<WorkerReply> PhaseWorker::run(int64_t Command, int64_t Arg) {
  if (Pid < 0)
    if (Error E = start())
      return E;
  Request Req{Command, Arg};
  std::string Buffer(MaxReply, '\0');
  ssize_t N = -1;
  if (sendAll(Socket, &Req, sizeof(Req))) {
    auto Until = std::chrono::steady_clock::now() + Timeout;
    for (;;) {
      auto Left = std::chrono::duration_cast<std::chrono::milliseconds>(
          Until - std::chrono::steady_clock::now());
      pollfd P{Socket, POLLIN, 0};
      int Ready = ::poll(&P, 1, int(std::max<int64_t>(0, Left.count())));
      if (Ready < 0 && errno == EINTR)
        continue;
      if (Ready == 0) {
        stop();
        return makeError(ErrorCode::Timeout, "the command took longer than ",
                         std::to_string(Timeout.count()),
                         " ms; its worker was stopped");
      }
      N = receive(Socket, &Buffer[0], Buffer.size());
      break;
    }
  }
  if (N < ssize_t(sizeof(ReplyHead))) {
    // EOF (the child died) or a broken socket: say how it ended. SIGKILL
    // first, so that a child alive behind a broken socket cannot block the
    // wait (a dead one keeps the status it ended with).
    ::close(Socket);
    Socket = -1;
    ::kill(Pid, SIGKILL);
    int Status = 0;
    while (::waitpid(Pid, &Status, 0) < 0 && errno == EINTR) {
    }
    Pid = -1;
    return makeError(ErrorCode::Broken, describeEnd(Status));
  }
  ReplyHead Head;
  std::memcpy(&Head, Buffer.data(), sizeof(Head));
  WorkerReply R;
  R.Obs = Head.Obs;
  R.End = Head.End != 0;
  R.Context.assign(
      Buffer.data() + sizeof(Head),
      std::min<size_t>(Head.ContextLength, size_t(N) - sizeof(Head)));
  if (R.End)
    stop();
  return R;
}

} // namespace mlbridge::phase

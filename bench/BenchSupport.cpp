//===- BenchSupport.cpp - Shared benchmark utilities ----------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

std::atomic<uint64_t> mlbridge::bench::Allocations{0};

// The whole operator new/delete family, so that libraries mixing variants
// (gRPC, ONNX Runtime) stay consistent.
void *operator new(size_t N) {
  ++mlbridge::bench::Allocations;
  if (void *P = std::malloc(N ? N : 1))
    return P;
  throw std::bad_alloc();
}
void *operator new[](size_t N) { return operator new(N); }
void *operator new(size_t N, const std::nothrow_t &) noexcept {
  ++mlbridge::bench::Allocations;
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

namespace mlbridge {
namespace bench {

Child::Child(std::vector<std::string> Args, int Cpu) {
  std::vector<char *> Argv;
  for (std::string &A : Args)
    Argv.push_back(&A[0]);
  Argv.push_back(nullptr);
  if (posix_spawn(&Pid, Argv[0], nullptr, nullptr, Argv.data(), environ))
    Pid = -1;
  if (Pid > 0 && Cpu >= 0) {
    cpu_set_t Set;
    CPU_ZERO(&Set);
    CPU_SET(Cpu, &Set);
    sched_setaffinity(Pid, sizeof(Set), &Set);
  }
}

Child::~Child() {
  if (Pid <= 0)
    return;
  for (int I = 0; WaitForExit && I < 200; ++I) {
    if (waitpid(Pid, nullptr, WNOHANG) == Pid)
      return;
    usleep(10000);
  }
  ::kill(Pid, SIGKILL);
  waitpid(Pid, nullptr, 0);
}

double timeCalls(const std::function<bool(int)> &Call, int Calls) {
  auto Start = std::chrono::steady_clock::now();
  for (int I = 0; I < Calls; ++I)
    if (!Call(I))
      return -1;
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - Start)
             .count() /
         Calls;
}

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  return V[V.size() / 2];
}

bool parseCallsAndReps(int Argc, char **Argv, int &Calls, int &Reps) {
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (A == "--calls" && I + 1 < Argc)
      Calls = std::atoi(Argv[++I]);
    else if (A == "--reps" && I + 1 < Argc)
      Reps = std::atoi(Argv[++I]);
    else {
      std::fprintf(stderr, "usage: %s [--calls N] [--reps R]\n", Argv[0]);
      return false;
    }
  }
  return true;
}

void pinTo(int Cpu) {
  cpu_set_t Set;
  CPU_ZERO(&Set);
  CPU_SET(Cpu, &Set);
  sched_setaffinity(0, sizeof(Set), &Set);
}

} // namespace bench
} // namespace mlbridge

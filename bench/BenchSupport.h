//===- BenchSupport.h - Shared benchmark utilities --------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What every benchmark needs: peer processes, timing loops, medians, and a
/// process-wide count of C++ heap allocations (BenchSupport.cpp replaces the
/// global operator new family in each benchmark binary).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_BENCH_BENCHSUPPORT_H
#define MLBRIDGE_BENCH_BENCHSUPPORT_H

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace mlbridge {
namespace bench {

/// C++ heap allocations made by the whole process so far.
extern std::atomic<uint64_t> Allocations;

/// A peer process started with posix_spawn.
class Child {
public:
  /// Starts Args[0]; with \p Cpu >= 0, pins the child to that CPU.
  explicit Child(std::vector<std::string> Args, int Cpu = -1);
  /// With \p WaitForExit, gives the child up to 2 s to exit by itself (its
  /// peer closed the channel) before killing it; otherwise kills it at once.
  ~Child();
  Child(const Child &) = delete;
  Child &operator=(const Child &) = delete;
  /// Whether the destructor waits for the child to exit first.
  bool WaitForExit = false;

private:
  pid_t Pid = -1;
};

/// Runs \p Call(0..Calls-1); microseconds per call, or -1 if a call failed.
double timeCalls(const std::function<bool(int)> &Call, int Calls);

/// The median of \p V.
double median(std::vector<double> V);

/// Parses "[--calls N] [--reps R]" into \p Calls and \p Reps (left as given
/// when absent); prints the usage and returns false on anything else.
bool parseCallsAndReps(int Argc, char **Argv, int &Calls, int &Reps);

/// Pins this process (and its future children) to \p Cpu.
void pinTo(int Cpu);

} // namespace bench
} // namespace mlbridge

#endif // MLBRIDGE_BENCH_BENCHSUPPORT_H

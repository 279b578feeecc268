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
#include <utility>
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
  /// The child's process id (-1 when it could not start).
  pid_t pid() const { return Pid; }

private:
  pid_t Pid = -1;
};

/// The resident set size of process \p Pid in KiB (VmRSS), or -1.
long residentKiB(pid_t Pid);

/// Runs \p Call(0..Calls-1); microseconds per call, or -1 if a call failed.
double timeCalls(const std::function<bool(int)> &Call, int Calls);

/// The median of \p V.
double median(std::vector<double> V);

/// The options every benchmark takes.
struct Options {
  /// Timed calls per repetition.
  int Calls = 0;
  /// Repetitions (the configurations alternate within each).
  int Reps = 0;
  /// Where --json writes the figures ("" when not asked).
  std::string JsonPath;
};

/// Handles a benchmark's own option \p Arg (with \p Next the argument after
/// it, or null): returns how many arguments it used (0 when it is not one
/// of its options, -1 when it is but is malformed).
using ExtraOption =
    std::function<int(const std::string &Arg, const char *Next)>;

/// Parses "--calls N", "--reps R" and "--json FILE" into \p O (left as given
/// when absent) and the rest through \p Extra; prints "usage: ARGV0
/// [--calls N] [--reps R] [--json FILE] \p Usage" and returns false on
/// anything else.
bool parseOptions(int Argc, char **Argv, Options &O,
                  const ExtraOption &Extra = nullptr,
                  const std::string &Usage = "");

/// "CPython 3.11.2 (/usr/bin/python3)" for the interpreter \p Python, or
/// "?" when it cannot be run.
std::string interpreterVersion(const std::string &Python);

/// The figures of one configuration over the repetitions.
struct Figures {
  /// The configuration.
  std::string Name;
  /// Microseconds per call, one per repetition.
  std::vector<double> Micros;
  /// The ratio to the baseline, one per repetition (empty: no baseline).
  std::vector<double> Ratios;
  /// C++ heap allocations per call (negative: not counted).
  double AllocsPerCall = -1;
};

/// Writes a benchmark's figures as JSON (--json): what was measured, when,
/// how, and per configuration the median, minimum and maximum microseconds
/// per call and ratio to the baseline, so that runs can be compared.
class JsonReport {
public:
  /// A report of benchmark \p Name (e.g. "mlbridge-bench-pipe").
  explicit JsonReport(std::string Name);
  /// Records a fact about the run (regime, payload, interpreter, ...).
  void note(const std::string &Key, const std::string &Value);
  /// Records a numeric fact about the run (calls, reps, ...).
  void note(const std::string &Key, double Value);
  /// Adds one configuration's figures.
  void add(const Figures &F);
  /// Writes the report to \p Path; prints the reason and returns false
  /// when it cannot.
  bool write(const std::string &Path) const;

private:
  std::string Name;
  std::vector<std::pair<std::string, std::string>> Facts; // JSON values
  std::vector<Figures> Configurations;
};

/// Pins this process (and its future children) to \p Cpu.
void pinTo(int Cpu);

} // namespace bench
} // namespace mlbridge

#endif // MLBRIDGE_BENCH_BENCHSUPPORT_H

//===- BenchSupport.cpp - Shared benchmark utilities ----------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"

#include "support/Json.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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

long residentKiB(pid_t Pid) {
  std::string Path = "/proc/" + std::to_string(Pid) + "/status";
  FILE *F = std::fopen(Path.c_str(), "r");
  if (!F)
    return -1;
  char Line[256];
  long KiB = -1;
  while (std::fgets(Line, sizeof(Line), F))
    if (std::sscanf(Line, "VmRSS: %ld kB", &KiB) == 1)
      break;
  std::fclose(F);
  return KiB;
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

bool parseOptions(int Argc, char **Argv, Options &O, const ExtraOption &Extra,
                  const std::string &Usage) {
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    const char *Next = I + 1 < Argc ? Argv[I + 1] : nullptr;
    int Used = 0;
    if ((A == "--calls" || A == "--reps") && Next && std::atoi(Next) > 0) {
      (A == "--calls" ? O.Calls : O.Reps) = std::atoi(Next);
      Used = 2;
    } else if (A == "--json" && Next) {
      O.JsonPath = Next;
      Used = 2;
    } else if (Extra) {
      Used = Extra(A, Next);
    }
    if (Used <= 0) {
      std::fprintf(stderr,
                   "usage: %s [--calls N] [--reps R] [--json FILE]%s%s\n",
                   Argv[0], Usage.empty() ? "" : " ", Usage.c_str());
      return false;
    }
    I += Used - 1;
  }
  return true;
}

std::string interpreterVersion(const std::string &Python) {
  std::string Command =
      "'" + Python +
      "' -c 'import platform; print(platform.python_implementation(), "
      "platform.python_version())' 2>/dev/null";
  std::string Out;
  if (FILE *P = ::popen(Command.c_str(), "r")) {
    char Buf[128];
    while (std::fgets(Buf, sizeof(Buf), P))
      Out += Buf;
    ::pclose(P);
  }
  while (!Out.empty() && (Out.back() == '\n' || Out.back() == ' '))
    Out.pop_back();
  return (Out.empty() ? std::string("?") : Out) + " (" + Python + ")";
}

namespace {

std::string jsonString(const std::string &S) {
  std::string Out;
  json::appendString(Out, S);
  return Out;
}

std::string jsonNumber(double V) {
  char Buf[32];
  std::snprintf(Buf, sizeof(Buf), "%.6g", V);
  return Buf;
}

/// "median_KEY": M, "min_KEY": A, "max_KEY": B of \p V.
std::string spread(const std::string &Key, const std::vector<double> &V) {
  auto MM = std::minmax_element(V.begin(), V.end());
  return "\"median_" + Key + "\": " + jsonNumber(median(V)) + ", \"min_" + Key +
         "\": " + jsonNumber(*MM.first) + ", \"max_" + Key +
         "\": " + jsonNumber(*MM.second);
}

} // namespace

JsonReport::JsonReport(std::string Name) : Name(std::move(Name)) {
  std::time_t Now = std::time(nullptr);
  char Date[32];
  std::strftime(Date, sizeof(Date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&Now));
  note("date", Date);
  note("cpus", double(::sysconf(_SC_NPROCESSORS_ONLN)));
}

void JsonReport::note(const std::string &Key, const std::string &Value) {
  Facts.emplace_back(Key, jsonString(Value));
}

void JsonReport::note(const std::string &Key, double Value) {
  Facts.emplace_back(Key, jsonNumber(Value));
}

void JsonReport::add(const Figures &F) { Configurations.push_back(F); }

bool JsonReport::write(const std::string &Path) const {
  std::string Out = "{\n  \"benchmark\": " + jsonString(Name);
  for (const auto &[Key, Value] : Facts)
    Out += ",\n  " + jsonString(Key) + ": " + Value;
  Out += ",\n  \"configurations\": [";
  for (size_t I = 0; I < Configurations.size(); ++I) {
    const Figures &F = Configurations[I];
    Out += std::string(I ? "," : "") + "\n    {\"name\": " + jsonString(F.Name);
    if (!F.Micros.empty())
      Out += ", " + spread("us", F.Micros);
    if (!F.Ratios.empty())
      Out += ", " + spread("ratio", F.Ratios);
    if (F.AllocsPerCall >= 0)
      Out += ", \"allocs_per_call\": " + jsonNumber(F.AllocsPerCall);
    Out += "}";
  }
  Out += "\n  ]\n}\n";
  FILE *File = std::fopen(Path.c_str(), "w");
  bool Ok = File && std::fwrite(Out.data(), 1, Out.size(), File) == Out.size();
  if (File)
    Ok = std::fclose(File) == 0 && Ok;
  if (!Ok)
    std::fprintf(stderr, "cannot write %s\n", Path.c_str());
  return Ok;
}

void pinTo(int Cpu) {
  cpu_set_t Set;
  CPU_ZERO(&Set);
  CPU_SET(Cpu, &Set);
  sched_setaffinity(0, sizeof(Set), &Set);
}

} // namespace bench
} // namespace mlbridge

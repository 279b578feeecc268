//===- PipeBench.cpp - Pipe runner round trip vs raw FIFO ping-pong -------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Cost of one decision through PipeModelRunner to the Python host (64 float32
// features, one int64 reply) in every protocol/format, next to a raw FIFO
// ping-pong carrying the same bytes to a raw Python peer, measured in the same
// run, rep by rep. Also counts heap allocations per call on the C++ side.
//
//   mlbridge-bench-pipe [--calls N] [--reps R] [--no-pin|--split] [--only TEXT]
//
// --only keeps the contenders whose name contains TEXT (plus the baseline).
//
// By default this process and its Python peers are pinned to CPU 0 (the
// one-vCPU regime of shared/notes/benchmarking.md); --split puts this process
// on CPU 0 and the peers on CPU 1 (the cross-vCPU regime, ~50 us per
// wake-up); --no-pin leaves placement to the scheduler.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <new>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

// --- Allocation counting ---------------------------------------------------
static std::atomic<uint64_t> Allocations{0};
void *operator new(size_t N) {
  ++Allocations;
  if (void *P = std::malloc(N ? N : 1))
    return P;
  throw std::bad_alloc();
}
void operator delete(void *P) noexcept { std::free(P); }
void operator delete(void *P, size_t) noexcept { std::free(P); }

using namespace mlbridge;
using Clock = std::chrono::steady_clock;

namespace {
constexpr int NumFeatures = 64;
const std::string Python = MLBRIDGE_BENCH_PYTHON;
const std::string BenchDir = std::string(MLBRIDGE_SOURCE_DIR) + "/bench/";

/// A child process, killed and reaped on destruction.
class Child {
public:
  explicit Child(std::vector<std::string> Args) {
    std::vector<char *> Argv;
    for (std::string &A : Args)
      Argv.push_back(&A[0]);
    Argv.push_back(nullptr);
    if (posix_spawn(&Pid, Argv[0], nullptr, nullptr, Argv.data(), environ))
      Pid = -1;
    if (Pid > 0 && PeerCpu >= 0) {
      cpu_set_t Set;
      CPU_ZERO(&Set);
      CPU_SET(PeerCpu, &Set);
      sched_setaffinity(Pid, sizeof(Set), &Set);
    }
  }
  /// When >= 0, children are moved to this CPU.
  static int PeerCpu;
  /// Gives the child up to 2 s to exit by itself (its peer closed the
  /// channel), then kills it.
  ~Child() {
    if (Pid <= 0)
      return;
    for (int I = 0; I < 200; ++I) {
      if (waitpid(Pid, nullptr, WNOHANG) == Pid)
        return;
      usleep(10000);
    }
    ::kill(Pid, SIGKILL);
    waitpid(Pid, nullptr, 0);
  }

private:
  pid_t Pid = -1;
};

int Child::PeerCpu = -1;

std::vector<TensorSpec> featureSpecs() {
  std::vector<TensorSpec> Specs;
  for (int I = 0; I < NumFeatures; ++I)
    Specs.push_back(TensorSpec::of<float>("f" + std::to_string(I)));
  return Specs;
}

/// One way of getting a decision; call() returns false on failure.
struct Contender {
  std::string Name;
  std::function<bool(int)> Call;
  std::vector<double> MicrosPerCall; // one per rep
  std::vector<double> Ratio;         // one per rep, against raw
  double AllocsPerCall = 0;
};

/// The baseline: the same request bytes over plain blocking FIFOs.
struct RawPingPong {
  explicit RawPingPong(FifoChannel C) : Channel(std::move(C)) {}
  FifoChannel Channel;
  std::unique_ptr<Child> Peer;
  int In = -1, Out = -1;
  std::string Request;
  ~RawPingPong() {
    if (In >= 0)
      ::close(In);
    if (Out >= 0)
      ::close(Out);
    Peer.reset();
  }
  bool start(size_t RequestBytes) {
    Request.assign(RequestBytes, 'x');
    Peer = std::make_unique<Child>(std::vector<std::string>{
        Python, BenchDir + "raw_pingpong_host.py", Channel.base(),
        std::to_string(RequestBytes), "8"});
    In = ::open(Channel.inPath().c_str(), O_RDONLY);
    Out = ::open(Channel.outPath().c_str(), O_WRONLY);
    return In >= 0 && Out >= 0;
  }
  bool call() {
    if (::write(Out, Request.data(), Request.size()) != ssize_t(Request.size()))
      return false;
    char Reply[8];
    size_t Got = 0;
    while (Got < sizeof(Reply)) {
      ssize_t N = ::read(In, Reply + Got, sizeof(Reply) - Got);
      if (N <= 0)
        return false;
      Got += size_t(N);
    }
    return true;
  }
};

struct RunnerUnderTest {
  // Destroyed in reverse order: the runner closes the channel, then the host
  // exits on EOF.
  std::unique_ptr<Child> Host;
  std::unique_ptr<PipeModelRunner> Runner;
  bool start(PipeProtocol P, Format F) {
    PipeOptions O;
    O.Protocol = P;
    O.Serialization = F;
    O.OpenTimeout = std::chrono::seconds(60);
    O.IoTimeout = std::chrono::seconds(60);
    auto R = PipeModelRunner::create(featureSpecs(),
                                     {TensorSpec::of<int64_t>("decision")}, O);
    if (!R) {
      std::fprintf(stderr, "%s\n", R.error().toString().c_str());
      return false;
    }
    Runner = std::move(*R);
    Host = std::make_unique<Child>(std::vector<std::string>{
        Python, "-m", "mlbridge", "serve", "--pipe", Runner->channelBase(),
        "--policy", BenchDir + "bench_policy.py:first_positive"});
    if (Error E = Runner->connect()) {
      std::fprintf(stderr, "%s\n", E.toString().c_str());
      return false;
    }
    return true;
  }
  bool call(int I) {
    float *F0 = Runner->input<float>(0);
    *F0 = float(I % 3) - 1.0f;
    for (int K = 1; K < NumFeatures; ++K)
      *Runner->input<float>(size_t(K)) = float(I + K) * 0.25f;
    auto D = Runner->evaluate<int64_t>();
    if (!D) {
      std::fprintf(stderr, "evaluate failed: %s\n",
                   D.error().toString().c_str());
      return false;
    }
    return *D == (*F0 > 0 ? 1 : 0);
  }
};

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  return V[V.size() / 2];
}

/// Runs \p Calls calls; returns microseconds per call, or -1 on failure.
double timeCalls(const std::function<bool(int)> &Call, int Calls,
                 uint64_t *AllocsOut = nullptr) {
  uint64_t Before = Allocations.load();
  auto Start = Clock::now();
  for (int I = 0; I < Calls; ++I)
    if (!Call(I))
      return -1;
  double Us =
      std::chrono::duration<double, std::micro>(Clock::now() - Start).count() /
      Calls;
  if (AllocsOut)
    *AllocsOut = Allocations.load() - Before;
  return Us;
}
} // namespace

int main(int argc, char **argv) {
  int Calls = 5000, Reps = 7;
  enum { Same, Split, Free } Placement = Same;
  std::string Only;
  for (int I = 1; I < argc; ++I) {
    std::string A = argv[I];
    if (A == "--only" && I + 1 < argc)
      Only = argv[++I];
    else if (A == "--calls" && I + 1 < argc)
      Calls = std::atoi(argv[++I]);
    else if (A == "--reps" && I + 1 < argc)
      Reps = std::atoi(argv[++I]);
    else if (A == "--no-pin")
      Placement = Free;
    else if (A == "--split")
      Placement = Split;
    else {
      std::fprintf(
          stderr,
          "usage: %s [--calls N] [--reps R] [--no-pin|--split] [--only TEXT]\n",
          argv[0]);
      return 2;
    }
  }
  if (Placement != Free) { // children inherit the affinity
    cpu_set_t Set;
    CPU_ZERO(&Set);
    CPU_SET(0, &Set);
    sched_setaffinity(0, sizeof(Set), &Set);
  }
  if (Placement == Split)
    Child::PeerCpu = 1;

  // The request the mlgo runner sends per call, byte for byte in size.
  std::string Sample = "{\"observation\":1000}\n";
  size_t RequestBytes = Sample.size() + NumFeatures * sizeof(float) + 1;

  auto Channel = FifoChannel::create();
  if (!Channel) {
    std::fprintf(stderr, "%s\n", Channel.error().toString().c_str());
    return 1;
  }
  auto Raw = std::make_unique<RawPingPong>(std::move(*Channel));
  if (!Raw->start(RequestBytes)) {
    std::fprintf(stderr, "cannot start the raw ping-pong peer\n");
    return 1;
  }
  struct Setup {
    const char *Name;
    PipeProtocol P;
    Format F;
  };
  const Setup Setups[] = {
      {"mlgo (LLVM protocol), bitstream", PipeProtocol::Mlgo,
       Format::Bitstream},
      {"extended, bitstream", PipeProtocol::Extended, Format::Bitstream},
      {"extended, protobuf", PipeProtocol::Extended, Format::Protobuf},
      {"extended, json", PipeProtocol::Extended, Format::Json},
  };
  std::vector<std::unique_ptr<RunnerUnderTest>> Runners;
  std::vector<Contender> Contenders;
  Contenders.push_back(
      {"raw FIFO ping-pong", [&](int) { return Raw->call(); }, {}, {}, 0});
  for (const Setup &S : Setups) {
    if (!Only.empty() && std::string(S.Name).find(Only) == std::string::npos)
      continue;
    auto R = std::make_unique<RunnerUnderTest>();
    if (!R->start(S.P, S.F))
      return 1;
    RunnerUnderTest *P = R.get();
    Runners.push_back(std::move(R));
    Contenders.push_back(
        {S.Name, [P](int I) { return P->call(I); }, {}, {}, 0});
  }

  // Warm up every peer (imports, caches), then interleave reps.
  for (Contender &C : Contenders)
    if (timeCalls(C.Call, 500) < 0) {
      std::fprintf(stderr, "%s failed during warm-up\n", C.Name.c_str());
      return 1;
    }
  for (int Rep = 0; Rep < Reps; ++Rep) {
    double RawUs = 0;
    for (size_t K = 0; K < Contenders.size(); ++K) {
      Contender &C = Contenders[K];
      uint64_t Allocs = 0;
      double Us = timeCalls(C.Call, Calls, &Allocs);
      if (Us < 0) {
        std::fprintf(stderr, "%s failed\n", C.Name.c_str());
        return 1;
      }
      if (K == 0)
        RawUs = Us;
      C.MicrosPerCall.push_back(Us);
      C.Ratio.push_back(Us / RawUs);
      C.AllocsPerCall = std::max(C.AllocsPerCall, double(Allocs) / Calls);
    }
  }

  std::printf("mlbridge pipe runner round trip: %d float32 features -> one "
              "int64, C++ runner <-> Python host\n",
              NumFeatures);
  std::printf("%d reps x %d calls, %s; raw ping-pong carries %zu request "
              "bytes + 8 reply bytes\n\n",
              Reps, Calls,
              Placement == Same ? "all processes pinned to CPU 0"
              : Placement == Split
                  ? "compiler side on CPU 0, Python peers on CPU 1"
                  : "processes unpinned",
              RequestBytes);
  std::printf("%-34s %26s %28s %12s\n", "", "us/call median [min..max]",
              "x raw, median [min..max]", "allocs/call");
  for (const Contender &C : Contenders) {
    auto MinMax =
        std::minmax_element(C.MicrosPerCall.begin(), C.MicrosPerCall.end());
    auto RMinMax = std::minmax_element(C.Ratio.begin(), C.Ratio.end());
    std::printf("%-34s %8.2f [%6.2f..%6.2f] %10.2fx [%5.2f..%5.2f] %12.3f\n",
                C.Name.c_str(), median(C.MicrosPerCall), *MinMax.first,
                *MinMax.second, median(C.Ratio), *RMinMax.first,
                *RMinMax.second, C.AllocsPerCall);
  }
  return 0;
}

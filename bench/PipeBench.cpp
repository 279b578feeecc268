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
//   mlbridge-bench-pipe [--calls N] [--reps R] [--json FILE]
//                       [--payload tensor|scalars] [--no-pin|--split]
//                       [--only TEXT] [--soak N]
//
// --payload: the 64 features as one float32 tensor of shape [64] (the
// default, the payload other libraries' figures use) or as 64 scalar
// tensors (f0..f63: 64 names, 64 values to encode in JSON and protobuf).
// --only keeps the contenders whose name contains TEXT (plus the baseline).
// --json writes each configuration's median, minimum and maximum
// microseconds per call and ratio to the raw ping-pong.
// --soak N then makes N more calls per configuration and prints how much
// the resident set of this process and of the Python peer grew over them
// (VmRSS; after the timed reps, so caches and arenas are warm).
//
// By default this process and its Python peers are pinned to CPU 0 (the
// one-vCPU regime of the README's figures); --split puts this process
// on CPU 0 and the peers on CPU 1 (the cross-vCPU regime, ~50 us per
// wake-up); --no-pin leaves placement to the scheduler.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include "BenchSupport.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <signal.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace mlbridge;
using bench::Child;
using bench::median;
using Clock = std::chrono::steady_clock;

namespace {
constexpr int NumFeatures = 64;
const std::string Python = MLBRIDGE_BENCH_PYTHON;
const std::string BenchDir = std::string(MLBRIDGE_SOURCE_DIR) + "/bench/";

/// When >= 0, peers are moved to this CPU (--split).
int PeerCpu = -1;
/// --payload scalars: 64 scalar tensors instead of one tensor of 64.
bool Scalars = false;

std::vector<TensorSpec> featureSpecs() {
  if (!Scalars)
    return {TensorSpec::of<float>("features", {NumFeatures})};
  std::vector<TensorSpec> Specs;
  for (int I = 0; I < NumFeatures; ++I)
    Specs.push_back(TensorSpec::of<float>("f" + std::to_string(I)));
  return Specs;
}

/// Feature \p K of the runner's inputs, whichever the payload.
float &feature(ModelRunner &R, int K) {
  return Scalars ? *R.input<float>(size_t(K)) : R.input<float>(0)[K];
}

/// One way of getting a decision; call() returns false on failure.
struct Contender {
  std::string Name;
  std::function<bool(int)> Call;
  std::vector<double> MicrosPerCall; // one per rep
  std::vector<double> Ratio;         // one per rep, against raw
  double AllocsPerCall = 0;
  pid_t Peer = -1; // the process answering the calls
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
    Peer = std::make_unique<Child>(
        std::vector<std::string>{Python, BenchDir + "raw_pingpong_host.py",
                                 Channel.base(), std::to_string(RequestBytes),
                                 "8"},
        PeerCpu);
    Peer->WaitForExit = true;
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
    Host = std::make_unique<Child>(
        std::vector<std::string>{Python, "-m", "mlbridge", "serve", "--pipe",
                                 Runner->channelBase(), "--policy",
                                 BenchDir + "bench_policy.py:first_positive"},
        PeerCpu);
    Host->WaitForExit = true; // exits on EOF once the runner is gone
    if (Error E = Runner->connect()) {
      std::fprintf(stderr, "%s\n", E.toString().c_str());
      return false;
    }
    return true;
  }
  bool call(int I) {
    float F0 = float(I % 3) - 1.0f;
    feature(*Runner, 0) = F0;
    for (int K = 1; K < NumFeatures; ++K)
      feature(*Runner, K) = float(I + K) * 0.25f;
    auto D = Runner->evaluate<int64_t>();
    if (!D) {
      std::fprintf(stderr, "evaluate failed: %s\n",
                   D.error().toString().c_str());
      return false;
    }
    return *D == (F0 > 0 ? 1 : 0);
  }
};

/// Runs \p Calls calls; returns microseconds per call (or -1 on failure)
/// and the C++ heap allocations they made.
double timeCalls(const std::function<bool(int)> &Call, int Calls,
                 uint64_t *AllocsOut) {
  uint64_t Before = bench::Allocations.load();
  double Us = bench::timeCalls(Call, Calls);
  *AllocsOut = bench::Allocations.load() - Before;
  return Us;
}
} // namespace

int main(int argc, char **argv) {
  bench::Options Opts{5000, 7, ""};
  enum { Same, Split, Free } Placement = Same;
  std::string Only;
  long Soak = 0;
  auto Extra = [&](const std::string &A, const char *Next) {
    if (A == "--only" && Next) {
      Only = Next;
      return 2;
    }
    if (A == "--soak" && Next) {
      Soak = std::atol(Next);
      return Soak > 0 ? 2 : -1;
    }
    if (A == "--payload" && Next) {
      Scalars = std::string(Next) == "scalars";
      return Scalars || std::string(Next) == "tensor" ? 2 : -1;
    }
    if (A == "--no-pin" || A == "--split") {
      Placement = A == "--split" ? Split : Free;
      return 1;
    }
    return 0;
  };
  if (!bench::parseOptions(argc, argv, Opts, Extra,
                           "[--payload tensor|scalars] [--no-pin|--split] "
                           "[--only TEXT] [--soak N]"))
    return 2;
  const int Calls = Opts.Calls, Reps = Opts.Reps;
  if (Placement != Free) // children inherit the affinity
    bench::pinTo(0);
  if (Placement == Split)
    PeerCpu = 1;

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
      {"shared memory (shm)", PipeProtocol::SharedMemory, Format::Bitstream},
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
        {S.Name, [P](int I) { return P->call(I); }, {}, {}, 0, P->Host->pid()});
  }

  // Warm up every peer (imports, caches), then interleave reps.
  for (Contender &C : Contenders)
    if (bench::timeCalls(C.Call, 500) < 0) {
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

  const char *Regime = Placement == Same ? "all processes pinned to CPU 0"
                       : Placement == Split
                           ? "compiler side on CPU 0, Python peers on CPU 1"
                           : "processes unpinned";
  const char *Payload =
      Scalars ? "64 float32 scalar tensors" : "one float32 tensor of 64";
  std::string Interpreter = bench::interpreterVersion(Python);
  std::printf("mlbridge pipe runner round trip: %s -> one int64, C++ runner "
              "<-> Python host (%s)\n",
              Payload, Interpreter.c_str());
  std::printf("%d reps x %d calls, %s; raw ping-pong carries %zu request "
              "bytes + 8 reply bytes\n\n",
              Reps, Calls, Regime, RequestBytes);
  std::printf("%-34s %26s %28s %12s\n", "", "us/call median [min..max]",
              "x raw, median [min..max]", "allocs/call");
  bench::JsonReport Report("mlbridge-bench-pipe");
  Report.note("payload", Payload);
  Report.note("regime", Regime);
  Report.note("python", Interpreter);
  Report.note("calls", Calls);
  Report.note("reps", Reps);
  Report.note("baseline", Contenders[0].Name);
  for (const Contender &C : Contenders) {
    auto MinMax =
        std::minmax_element(C.MicrosPerCall.begin(), C.MicrosPerCall.end());
    auto RMinMax = std::minmax_element(C.Ratio.begin(), C.Ratio.end());
    std::printf("%-34s %8.2f [%6.2f..%6.2f] %10.2fx [%5.2f..%5.2f] %12.3f\n",
                C.Name.c_str(), median(C.MicrosPerCall), *MinMax.first,
                *MinMax.second, median(C.Ratio), *RMinMax.first,
                *RMinMax.second, C.AllocsPerCall);
    Report.add({C.Name, C.MicrosPerCall, C.Ratio, C.AllocsPerCall});
  }
  if (Soak > 0) {
    std::printf("\nresident set growth over %ld more calls (VmRSS, KiB)\n",
                Soak);
    std::printf("%-34s %14s %14s\n", "", "this process", "Python peer");
    for (size_t K = 1; K < Contenders.size(); ++K) {
      Contender &C = Contenders[K];
      long Own = bench::residentKiB(::getpid());
      long Peer = bench::residentKiB(C.Peer);
      for (long I = 0; I < Soak; ++I)
        if (!C.Call(int(I % 1000000000))) {
          std::fprintf(stderr, "%s failed during the soak\n", C.Name.c_str());
          return 1;
        }
      long OwnGrowth = bench::residentKiB(::getpid()) - Own;
      long PeerGrowth = bench::residentKiB(C.Peer) - Peer;
      std::printf("%-34s %+14ld %+14ld\n", C.Name.c_str(), OwnGrowth,
                  PeerGrowth);
      Report.note(C.Name + ": RSS growth over the soak, this process (KiB)",
                  double(OwnGrowth));
      Report.note(C.Name + ": RSS growth over the soak, Python peer (KiB)",
                  double(PeerGrowth));
    }
    Report.note("soak calls", double(Soak));
  }
  if (!Opts.JsonPath.empty() && !Report.write(Opts.JsonPath))
    return 1;
  return 0;
}

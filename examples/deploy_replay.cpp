//===- deploy_replay.cpp - One policy in-process and over pipes -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The deployment half of the demo (examples/demo): replays recorded inlining
// decisions (three int64 features and the decision the compiler got, as raw
// int64 quads) through the same policy twice, switching only the runner's
// constructor: OnnxModelRunner in-process, and PipeModelRunner to the Python
// policy. Checks that both give the recorded decisions and times both.
//
//   mlbridge-example-deploy-replay MODEL.onnx CASES.bin PYTHON POLICY
//
//===----------------------------------------------------------------------===//

#include "mlbridge/OnnxModelRunner.h"
#include "mlbridge/PipeModelRunner.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace mlbridge;
using Clock = std::chrono::steady_clock;

namespace {
std::vector<TensorSpec> features() {
  return {TensorSpec::of<int64_t>("cost_estimate"),
          TensorSpec::of<int64_t>("callee_basic_block_count"),
          TensorSpec::of<int64_t>("last_call_to_static_bonus")};
}

/// Replays every case once per pass; returns agreements and µs/decision.
struct Replay {
  int Agree = 0, Total = 0;
  double Micros = 0;
};

Replay replay(ModelRunner &R, const std::vector<int64_t> &Cases, int Passes) {
  Replay Out;
  size_t N = Cases.size() / 4;
  auto Start = Clock::now();
  for (int P = 0; P < Passes; ++P)
    for (size_t I = 0; I < N; ++I) {
      for (size_t K = 0; K < 3; ++K)
        *R.input<int64_t>(K) = Cases[I * 4 + K];
      auto D = R.evaluate<int64_t>();
      if (P == 0) {
        ++Out.Total;
        Out.Agree += D && (*D != 0) == (Cases[I * 4 + 3] != 0);
      }
    }
  Out.Micros =
      std::chrono::duration<double, std::micro>(Clock::now() - Start).count() /
      double(N * size_t(Passes));
  return Out;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.onnx CASES.bin PYTHON POLICY\n",
                 argv[0]);
    return 2;
  }
  std::ifstream F(argv[2], std::ios::binary);
  std::string Bytes((std::istreambuf_iterator<char>(F)),
                    std::istreambuf_iterator<char>());
  std::vector<int64_t> Cases(Bytes.size() / sizeof(int64_t));
  std::memcpy(Cases.data(), Bytes.data(), Cases.size() * sizeof(int64_t));
  if (Cases.empty() || Cases.size() % 4) {
    std::fprintf(stderr, "no decisions to replay in %s\n", argv[2]);
    return 1;
  }
  // Deployment: the model in-process.
  auto InProcess = OnnxModelRunner::createFromFile(
      argv[1], features(), {TensorSpec::of<int64_t>("inlining_decision")});
  if (!InProcess) {
    std::fprintf(stderr, "%s\n", InProcess.error().toString().c_str());
    return 1;
  }
  Replay Local = replay(**InProcess, Cases, 200);
  // Training setup: the same policy served from Python over pipes.
  PipeOptions O;
  O.OpenTimeout = std::chrono::seconds(60);
  auto Piped = PipeModelRunner::create(
      features(), {TensorSpec::of<int64_t>("inlining_decision")}, O);
  if (!Piped) {
    std::fprintf(stderr, "%s\n", Piped.error().toString().c_str());
    return 1;
  }
  std::vector<std::string> Args = {argv[3],    "-m",
                                   "mlbridge", "serve",
                                   "--pipe",   (*Piped)->channelBase(),
                                   "--policy", argv[4]};
  std::vector<char *> Argv;
  for (std::string &A : Args)
    Argv.push_back(&A[0]);
  Argv.push_back(nullptr);
  // The host dies with this program, whatever kills it.
  pid_t Parent = getpid();
  pid_t Host = fork();
  if (Host == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == Parent)
      execv(Argv[0], Argv.data());
    _exit(127);
  }
  if (Host < 0) {
    std::fprintf(stderr, "cannot start the Python host\n");
    return 1;
  }
  Replay Remote = replay(**Piped, Cases, 5);
  Piped->reset(); // the host sees EOF and exits
  waitpid(Host, nullptr, 0);
  std::printf("deployment: %d recorded decisions replayed through the same "
              "policy\n",
              Local.Total);
  std::printf("  in-process (OnnxModelRunner)      %7.2f us/decision, agrees "
              "%d/%d\n",
              Local.Micros, Local.Agree, Local.Total);
  std::printf("  over pipes (Python policy.py)     %7.2f us/decision, agrees "
              "%d/%d\n",
              Remote.Micros, Remote.Agree, Remote.Total);
  std::printf("  in-process is %.0fx faster per decision\n",
              Remote.Micros / Local.Micros);
  return Local.Agree == Local.Total && Remote.Agree == Remote.Total ? 0 : 1;
}

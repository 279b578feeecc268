//===- pipe_advisor.cpp - A compiler heuristic asking a model over pipes --===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// What a compiler pass does with mlbridge: describe its features, fill the
// runner's buffers, evaluate, and fall back to its own heuristic on any
// error. Run it against the Python host (the FIFOs first, so that neither
// side can open before they exist):
//
//   D=$(mktemp -d) && mkfifo $D/ch.in $D/ch.out
//   mlbridge serve --pipe $D/ch --problem inlining --policy default &
//   build/examples/mlbridge-example-pipe-advisor $D/ch
//
// With no argument it creates a private channel and prints its base path on
// stderr, then waits for a host to connect.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include <cstdio>

using namespace mlbridge;

namespace {
/// The compiler's own heuristic, used whenever the model is unavailable.
bool defaultHeuristic(int64_t CalleeSize, int64_t CallSites) {
  return CalleeSize * CallSites < 50;
}
} // namespace

int main(int argc, char **argv) {
  PipeOptions Options;
  if (argc > 1)
    Options.ChannelBase = argv[1];
  Options.Protocol = PipeProtocol::Mlgo;
  Options.OpenTimeout = std::chrono::seconds(30);
  Options.IoTimeout = std::chrono::seconds(5);
  auto Runner = PipeModelRunner::create(
      {TensorSpec::of<int64_t>("callee_size"),
       TensorSpec::of<int64_t>("call_sites"),
       TensorSpec::of<int64_t>("inlining_default")},
      {TensorSpec::of<int64_t>("inlining_decision")}, Options);
  if (!Runner) {
    std::fprintf(stderr, "cannot create runner: %s\n",
                 Runner.error().toString().c_str());
    return 1;
  }
  std::fprintf(stderr, "channel: %s\n", (*Runner)->channelBase().c_str());
  if (Error E = (*Runner)->switchContext("")) // LLVM's inliner does this too
    std::fprintf(stderr, "model unavailable (%s); using the default\n",
                 E.toString().c_str());
  int Inlined = 0, FromModel = 0;
  for (int64_t Call = 0; Call < 20; ++Call) {
    int64_t Size = 3 + Call * 2, Sites = 1 + Call % 4;
    bool Default = defaultHeuristic(Size, Sites);
    *(*Runner)->input<int64_t>(0) = Size;
    *(*Runner)->input<int64_t>(1) = Sites;
    *(*Runner)->input<int64_t>(2) = Default;
    bool Inline = Default;
    auto Advice = (*Runner)->evaluate<int64_t>();
    if (Advice) {
      Inline = *Advice != 0;
      ++FromModel;
    }
    Inlined += Inline;
  }
  std::printf("decisions: 20, from the model: %d, inlined: %d\n", FromModel,
              Inlined);
  return 0;
}

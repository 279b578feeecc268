//===- grpc_advisor.cpp - A compiler heuristic asking a gRPC model server -===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// One "compilation": asks a model server for DECISIONS decisions over one
// session and checks every answer, falling back to a default heuristic when
// the server is unavailable. Several of these run concurrently against one
// server in tests/python/test_grpc_processes.py.
//
//   mlbridge serve --grpc unix:/tmp/m.sock --policy
//   tests/cpp/policies/echo.py:fail_on_negative & mlbridge-example-grpc-advisor
//   unix:/tmp/m.sock 7 1000 [streaming]
//
// The policy answers x + 1; the example sends x = SEED * 1000000 + i and
// exits 0 only if every answer is right (prints the count on stdout).
//
//===----------------------------------------------------------------------===//

#include "mlbridge/GrpcModelRunner.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mlbridge;

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s TARGET SEED DECISIONS [streaming]\n",
                 argv[0]);
    return 2;
  }
  GrpcOptions Options;
  Options.Target = argv[1];
  Options.Mode = argc > 4 && std::strcmp(argv[4], "streaming") == 0
                     ? GrpcMode::Streaming
                     : GrpcMode::Unary;
  Options.ConnectTimeout = std::chrono::seconds(30);
  Options.CallTimeout = std::chrono::seconds(10);
  int64_t Seed = std::atoll(argv[2]);
  int Decisions = std::atoi(argv[3]);
  auto Runner = GrpcModelRunner::create(
      {TensorSpec::of<int64_t>("x")}, {TensorSpec::of<int64_t>("y")}, Options);
  if (!Runner) {
    std::fprintf(stderr, "%s\n", Runner.error().toString().c_str());
    return 1;
  }
  int Right = 0, Fallbacks = 0;
  for (int I = 0; I < Decisions; ++I) {
    int64_t X = Seed * 1000000 + I;
    *(*Runner)->input<int64_t>(0) = X;
    auto Y = (*Runner)->evaluate<int64_t>();
    if (!Y) {
      ++Fallbacks; // a compiler would use its default heuristic here
      std::fprintf(stderr, "decision %d: %s\n", I,
                   Y.error().toString().c_str());
      continue;
    }
    Right += *Y == X + 1;
  }
  std::printf("%d\n", Right);
  return Right == Decisions && Fallbacks == 0 ? 0 : 1;
}

// Uses the installed gRPC component: a runner from a configuration string is
// created without blocking, and fails within its deadline with no server.
#include "mlbridge/GrpcModelRunner.h"
#include "mlbridge/RunnerConfig.h"

int main() {
  using namespace mlbridge;
  RunnerFactories F = RunnerFactories::core();
  addGrpcRunners(F);
  auto R = createRunner(
      *RunnerConfig::parse("grpc:unix:/nonexistent/model.sock,timeout_ms=200"),
      {TensorSpec::of<int64_t>("x")}, {TensorSpec::of<int64_t>("y")}, F);
  if (!R)
    return 1;
  auto Y = (*R)->evaluate<int64_t>();
  return Y ? 2 : 0;
}

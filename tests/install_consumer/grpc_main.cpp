// Uses the installed gRPC component: a runner is created without blocking.
#include "mlbridge/GrpcModelRunner.h"

int main() {
  mlbridge::GrpcOptions O;
  O.Target = "unix:/nonexistent/model.sock";
  auto R = mlbridge::GrpcModelRunner::create(
      {mlbridge::TensorSpec::of<int64_t>("x")},
      {mlbridge::TensorSpec::of<int64_t>("y")}, O);
  return R ? 0 : 1;
}

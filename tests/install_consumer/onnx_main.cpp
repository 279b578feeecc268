// Uses the installed ONNX component: a runner made by createRunner() from a
// configuration evaluates mlp.onnx (argv[1]) on the first case of its
// reference file (argv[2]: mlp.cases.bin).
#include "MlpCase.h"
#include "mlbridge/OnnxModelRunner.h"
#include "mlbridge/RunnerConfig.h"

#include <cstdio>

int main(int argc, char **argv) {
  using namespace mlbridge;
  if (argc != 3)
    return 2;
  RunnerFactories F = RunnerFactories::core();
  addOnnxRunners(F);
  RunnerConfig C;
  C.Kind = RunnerKind::Onnx;
  C.Argument = argv[1];
  auto R = createRunner(C, {TensorSpec::of<float>("x", {1, 64})},
                        {TensorSpec::of<float>("y", {1, 1})}, F);
  if (!R) {
    std::fprintf(stderr, "%s\n", R.error().toString().c_str());
    return 1;
  }
  return checkMlpCase(**R, argv[2], "onnx");
}

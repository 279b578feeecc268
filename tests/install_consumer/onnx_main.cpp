// Uses the installed ONNX component: evaluates mlp.onnx (argv[1]) and checks
// the first case of its reference file (argv[2]: mlp.cases.bin from
// tools/make_onnx_test_models.py: 200 inputs of 64 floats, then 200 outputs).
#include "mlbridge/OnnxModelRunner.h"
#include "mlbridge/RunnerConfig.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

int main(int argc, char **argv) {
  using namespace mlbridge;
  if (argc != 3)
    return 2;
  std::ifstream In(argv[2], std::ios::binary);
  std::vector<float> Cases(200 * 65);
  In.read(reinterpret_cast<char *>(Cases.data()),
          std::streamsize(Cases.size() * sizeof(float)));
  if (!In)
    return 3;
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
  for (int I = 0; I < 64; ++I)
    (*R)->input<float>(0)[I] = Cases[I];
  auto Y = (*R)->evaluate<float>();
  if (!Y || std::fabs(*Y - Cases[200 * 64]) > 1e-5f) {
    std::fprintf(stderr, "wrong result\n");
    return 1;
  }
  std::printf("onnx ok %g\n", double(*Y));
  return 0;
}

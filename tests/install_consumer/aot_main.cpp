// A downstream program evaluating a model compiled by mlbridge_add_aot_model
// through the installed runner API. Checks the first case of the model's
// numpy reference file (argv[1]: mlp.cases.bin from
// tools/make_onnx_test_models.py: 200 inputs of 64 floats, then 200 outputs).
#include "ConsumerModel.h"
#include "mlbridge/AotModelRunner.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  std::ifstream In(argv[1], std::ios::binary);
  std::vector<float> Cases(200 * 65);
  In.read(reinterpret_cast<char *>(Cases.data()),
          std::streamsize(Cases.size() * sizeof(float)));
  if (!In)
    return 3;
  auto R = mlbridge::AotModelRunner<mlbridge_models::ConsumerModel>::create();
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
  std::printf("aot ok %g\n", double(*Y));
  return 0;
}

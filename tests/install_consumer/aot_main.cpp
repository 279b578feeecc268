// A downstream program evaluating a model compiled by mlbridge_add_aot_model
// through the installed runner API, on the first case of the model's numpy
// reference file (argv[1]: mlp.cases.bin).
#include "ConsumerModel.h"
#include "MlpCase.h"
#include "mlbridge/AotModelRunner.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  auto R = mlbridge::AotModelRunner<mlbridge_models::ConsumerModel>::create();
  if (!R) {
    std::fprintf(stderr, "%s\n", R.error().toString().c_str());
    return 1;
  }
  return checkMlpCase(**R, argv[1], "aot");
}

// The first case of mlp.onnx's reference file (mlp.cases.bin from
// tools/make_onnx_test_models.py: 200 inputs of 64 floats, then 200 outputs),
// and the check of a runner's answer to it, shared by the consumers that run
// that model.
#ifndef MLBRIDGE_CONSUMER_MLPCASE_H
#define MLBRIDGE_CONSUMER_MLPCASE_H

#include "mlbridge/ModelRunner.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

/// Feeds case 0 of \p CasesPath to \p R (input 0, 64 floats), evaluates and
/// checks output 0; prints "<Label> ok" and returns 0 when it matches.
inline int checkMlpCase(mlbridge::ModelRunner &R, const char *CasesPath,
                        const char *Label) {
  std::ifstream In(CasesPath, std::ios::binary);
  std::vector<float> Cases(200 * 65);
  In.read(reinterpret_cast<char *>(Cases.data()),
          std::streamsize(Cases.size() * sizeof(float)));
  if (!In)
    return 3;
  for (int I = 0; I < 64; ++I)
    R.input<float>(0)[I] = Cases[I];
  auto Y = R.evaluate<float>();
  if (!Y || std::fabs(*Y - Cases[200 * 64]) > 1e-5f) {
    std::fprintf(stderr, "%s: wrong result\n", Label);
    return 1;
  }
  std::printf("%s ok %g\n", Label, double(*Y));
  return 0;
}

#endif // MLBRIDGE_CONSUMER_MLPCASE_H

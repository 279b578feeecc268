// Uses the installed headers and library: makes a spec and encodes it.
#include "mlbridge/Codec.h"
#include "mlbridge/PipeModelRunner.h"

#include <cstdio>

int main() {
  auto B = mlbridge::TensorBuffers::create(
      {mlbridge::TensorSpec::of<int64_t>("x")}, "inputs");
  if (!B)
    return 1;
  std::string Out;
  if (mlbridge::getCodec(mlbridge::Format::Json).encode(0, *B, Out))
    return 1;
  std::printf("%s\n", Out.c_str());
  return 0;
}

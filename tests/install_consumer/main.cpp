// Uses the installed core: encodes a tensor, and creates runners from
// configuration strings (createRunner with the core factories).
#include "mlbridge/Codec.h"
#include "mlbridge/RunnerConfig.h"

#include <cstdio>

int main() {
  using namespace mlbridge;
  auto B = TensorBuffers::create({TensorSpec::of<int64_t>("x")}, "inputs");
  if (!B)
    return 1;
  std::string Out;
  if (getCodec(Format::Json).encode(0, *B, Out))
    return 1;
  std::printf("%s\n", Out.c_str());

  // A baseline runner answering one of its inputs.
  auto Echo = createRunner(*RunnerConfig::parse("echo:x"),
                           {TensorSpec::of<int64_t>("x")},
                           {TensorSpec::of<int64_t>("y")});
  if (!Echo)
    return 2;
  *(*Echo)->input<int64_t>(0) = 42;
  auto Y = (*Echo)->evaluate<int64_t>();
  if (!Y || *Y != 42)
    return 3;
  // A pipe runner on a private channel: created without blocking.
  auto Pipe = createRunner(
      *RunnerConfig::parse("pipe,protocol=extended,format=json"),
      {TensorSpec::of<int64_t>("x")}, {TensorSpec::of<int64_t>("y")});
  if (!Pipe)
    return 4;
  // A kind the core cannot create says so.
  auto Onnx = createRunner(*RunnerConfig::parse("onnx:m.onnx"), {}, {});
  if (Onnx || Onnx.error().code() != ErrorCode::Unsupported)
    return 5;
  return 0;
}

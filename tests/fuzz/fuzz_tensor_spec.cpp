//===- fuzz_tensor_spec.cpp - Fuzz TensorSpec::fromJSON -------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// TensorSpec::fromJSON, LLVM's spec form as found in handshakes, training-log
// headers and plugin configuration. A spec that parses must round-trip:
// fromJSON(toJSON()) is the same spec, and toJSON() is a fixed point.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

using namespace mlbridge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  auto Spec = TensorSpec::fromJSON(fuzz::asView(Data, Size));
  if (!Spec)
    return 0;
  std::string Json = Spec->toJSON();
  auto Again = TensorSpec::fromJSON(Json);
  if (!Again)
    fuzz::die("cannot parse a spec's own JSON", Again.takeError());
  if (*Again != *Spec || Again->toJSON() != Json)
    fuzz::die("a spec changed in a JSON round trip",
              makeError(ErrorCode::Protocol, Json));
  return 0;
}

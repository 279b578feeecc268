//===- fuzz_interactive_protocol.cpp - Fuzz LLVM's interactive lines ------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The lines mlbridge-interactive-host reads from an LLVM tool: the input's
// first line as a header, every later line as a context or observation
// line. A header that parses stays within the budgets (features, bytes per
// question) and its specs round-trip through JSON.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "pipe/InteractiveProtocol.h"

using namespace mlbridge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string_view Input = fuzz::asView(Data, Size);
  size_t End = Input.find('\n');
  std::string_view First = Input.substr(0, End);
  auto H = interactive::parseHeader(First);
  if (H) {
    if (H->Features.empty() || H->Features.size() > interactive::MaxFeatures)
      fuzz::die("a header out of its budget parsed",
                makeError(ErrorCode::Protocol, std::string(First)));
    size_t Bytes = 0;
    for (const TensorSpec &S : H->Features) {
      Bytes += S.byteSize();
      auto Again = TensorSpec::fromJSON(S.toJSON());
      if (!Again || *Again != S)
        fuzz::die("a header's spec does not round-trip",
                  makeError(ErrorCode::Protocol, S.toJSON()));
    }
    if (Bytes > interactive::MaxObservationBytes)
      fuzz::die("a header's features exceed the budget",
                makeError(ErrorCode::Protocol, std::string(First)));
    if (H->Advice.byteSize() > interactive::MaxAdviceBytes)
      fuzz::die("a header's advice exceeds the budget",
                makeError(ErrorCode::Protocol, std::string(First)));
  }
  while (End != std::string_view::npos) {
    size_t Next = Input.find('\n', End + 1);
    auto Q = interactive::parseQuestionLine(Input.substr(
        End + 1, Next == std::string_view::npos ? std::string_view::npos
                                                : Next - End - 1));
    if (Q && Q->Observation && !Q->Context.empty())
      fuzz::die("an observation line named a context",
                makeError(ErrorCode::Protocol, Q->Context));
    End = Next;
  }
  return 0;
}

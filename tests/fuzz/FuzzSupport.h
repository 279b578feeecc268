//===- FuzzSupport.h - Shared set-up of the libFuzzer targets ---*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Shared by the libFuzzer targets of tests/fuzz (docs/fuzzing.md): the
/// schemas of the golden vectors (tests/golden/cases.json, the seeds' own
/// schemas), a codec harness with a round-trip oracle, and a pipe filled with
/// the input for the targets that read through fifo::Reader.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TESTS_FUZZ_FUZZSUPPORT_H
#define MLBRIDGE_TESTS_FUZZ_FUZZSUPPORT_H

#include "mlbridge/Codec.h"
#include "mlbridge/TensorSpec.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mlbridge {
namespace fuzz {

/// The fuzzer's input as a string_view.
inline std::string_view asView(const uint8_t *Data, size_t Size) {
  return std::string_view(reinterpret_cast<const char *>(Data), Size);
}

/// Prints \p What and \p E and aborts: a broken invariant is a finding.
[[noreturn]] void die(const char *What, const Error &E);

/// The schema of every case of tests/golden/cases.json (its tensors, in
/// order), then one schema with more tensors than TensorMatcher tracks inline.
/// Loaded once from $MLBRIDGE_GOLDEN_DIR or the source tree; aborts when the
/// file cannot be read or parsed.
const std::vector<std::vector<TensorSpec>> &fuzzSchemas();

/// Decodes \p Payload with the codec of \p F against the schemas of
/// fuzzSchemas(): the first one, and every other one whose first tensor's name
/// occurs in \p Payload (all of them for bitstream). Whenever a decode
/// succeeds, checks the round trip: the decoded tensors and observation
/// encode to bytes that decode to exactly the same tensor bytes and
/// observation; aborts otherwise.
void decodeAgainstSchemas(Format F, std::string_view Payload);

/// A pipe whose write end was closed after writing \p Bytes (its capacity is
/// raised to hold them): reading it yields \p Bytes, then end of file. Closes
/// the read end on destruction.
class FilledPipe {
public:
  /// Creates the pipe; aborts when the system refuses.
  explicit FilledPipe(std::string_view Bytes);
  ~FilledPipe();
  FilledPipe(const FilledPipe &) = delete;
  FilledPipe &operator=(const FilledPipe &) = delete;

  /// The read end.
  int fd() const { return ReadEnd; }

private:
  int ReadEnd = -1;
};

} // namespace fuzz
} // namespace mlbridge

#endif // MLBRIDGE_TESTS_FUZZ_FUZZSUPPORT_H

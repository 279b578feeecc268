//===- pipe/InteractiveProtocol.h - LLVM's interactive lines ----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: the text lines of LLVM's interactive protocol as the model side
/// reads them (docs/protocol.md): the header naming the features and the
/// advice, and the context and observation lines before each question's
/// tensors. Used by mlbridge-interactive-host; fuzzed
/// (fuzz_interactive_protocol).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPE_INTERACTIVEPROTOCOL_H
#define MLBRIDGE_PIPE_INTERACTIVEPROTOCOL_H

#include "mlbridge/Codec.h"
#include "mlbridge/Error.h"
#include "mlbridge/TensorSpec.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {
namespace interactive {

/// Most features a header may declare.
inline constexpr size_t MaxFeatures = 4096;
/// Most bytes of features per question: one message of the size budget
/// (DefaultMaxMessageBytes, docs/security.md).
inline constexpr size_t MaxObservationBytes = DefaultMaxMessageBytes;
/// Most bytes of the advice (the answer to one question): the same budget.
inline constexpr size_t MaxAdviceBytes = DefaultMaxMessageBytes;

/// LLVM's header: the features it sends and the advice it reads.
struct Header {
  std::vector<TensorSpec> Features;
  TensorSpec Advice;
};

/// Parses a header line (without its newline). A header with a score (a
/// development build's training log) is Unsupported; more than MaxFeatures
/// features, MaxObservationBytes per question or an advice of more than
/// MaxAdviceBytes is TooLarge, naming the budget: the host allocates nothing
/// from a header this refuses.
Expected<Header> parseHeader(std::string_view Line);

/// One line before a question's tensors: a new context, or an observation.
struct QuestionLine {
  bool Observation = false;
  /// The context's name (for a context line).
  std::string Context;
};

/// Parses a context (`{"context":NAME}`) or observation
/// (`{"observation":N}`) line.
Expected<QuestionLine> parseQuestionLine(std::string_view Line);

} // namespace interactive
} // namespace mlbridge

#endif // MLBRIDGE_PIPE_INTERACTIVEPROTOCOL_H

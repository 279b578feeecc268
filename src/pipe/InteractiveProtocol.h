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
/// Most bytes of features per question.
inline constexpr size_t MaxObservationBytes = size_t(64) << 20;

/// LLVM's header: the features it sends and the advice it reads.
struct Header {
  std::vector<TensorSpec> Features;
  TensorSpec Advice;
};

/// Parses a header line (without its newline). A header with a score (a
/// development build's training log) is Unsupported; more than MaxFeatures
/// features or MaxObservationBytes per question is TooLarge.
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

//===- mlbridge/TrainingLogWriter.h - LLVM training logs --------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Writes LLVM's training-log format (docs/protocol.md): a JSON header line,
/// then context lines, observation lines with raw tensor bytes, and optional
/// outcome lines with the reward. Readable by LLVM's log_reader.py and by
/// mlbridge.training_log in Python.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TRAININGLOGWRITER_H
#define MLBRIDGE_TRAININGLOGWRITER_H

#include "mlbridge/Error.h"
#include "mlbridge/TensorSpec.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// Streams a training log to a file.
class TrainingLogWriter {
public:
  /// Creates (truncates) \p Path and writes the header. \p Score, when
  /// given, makes every observation carry a reward; \p Advice is recorded in
  /// the header as the decision's spec. Invalid specs (see
  /// TensorSpec::isValid) and duplicate feature names are errors.
  static Expected<TrainingLogWriter>
  create(const std::string &Path, std::vector<TensorSpec> Features,
         std::optional<TensorSpec> Score = std::nullopt,
         std::optional<TensorSpec> Advice = std::nullopt);

  /// Renders the header line (with its newline) for these specs.
  static std::string header(const std::vector<TensorSpec> &Features,
                            const std::optional<TensorSpec> &Score,
                            const std::optional<TensorSpec> &Advice);

  /// Starts a context; observation numbers restart at 0.
  Error switchContext(std::string_view Name);

  /// Logs one observation: \p Data[i] points to feature i's bytes (header
  /// order). \p Reward points to the score tensor's bytes and is required
  /// exactly when the header has a score.
  Error logObservation(const void *const *Data, const void *Reward = nullptr);

  /// Flushes buffered bytes to the file.
  Error flush();

private:
  struct FileCloser {
    void operator()(std::FILE *F) const { std::fclose(F); }
  };
  TrainingLogWriter() = default;
  Error writeBuffer();

  std::unique_ptr<std::FILE, FileCloser> File;
  std::string Path;
  std::vector<TensorSpec> Features;
  std::optional<TensorSpec> Score;
  std::string Buffer;
  uint64_t Observation = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_TRAININGLOGWRITER_H

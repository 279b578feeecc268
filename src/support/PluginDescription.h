//===- support/PluginDescription.h - A plugin describes itself --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What every mlbridge plugin says of itself when its option "describe"
/// names a file (docs/plugin-description.md): its options (from the same
/// table its parser reads, support/PluginSettings.h), how each is given on
/// the compiler's command line and in the environment, the features a model
/// reads and the answer it gives. One JSON object, pinned by
/// tests/golden/plugin_description.json and read by
/// mlbridge.plugin_description, so that a tool or a user learns the
/// plugin's contract from the plugin rather than from a copy of it.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SUPPORT_PLUGINDESCRIPTION_H
#define MLBRIDGE_SUPPORT_PLUGINDESCRIPTION_H

#include "mlbridge/Error.h"
#include "mlbridge/TensorSpec.h"
#include "support/PluginSettings.h"

#include <string>
#include <vector>

namespace mlbridge {

/// A plugin's contract.
struct PluginDescription {
  /// The tool's name in its statistics record ("inline-advisor",
  /// "gcc-unroll", "mlir-tiling"; docs/run-stats.md).
  std::string Tool;
  /// The plugin's part of its environment variables ("INLINE", "GCC",
  /// "MLIR": MLBRIDGE_<PLUGIN>_<KEY>).
  std::string Plugin;
  /// How an option is written on the command line: Before + key + After
  /// ("-mlbridge-" "runner" "=", "mlbridge-tile{" "runner" "=...}").
  std::string Before, After;
  /// The options, as the plugin's parser declares them.
  std::vector<OptionSpec> Options;
  /// What a model reads, in order.
  std::vector<TensorSpec> Features;
  /// What a model answers.
  std::vector<TensorSpec> Answers;

  /// The description as one JSON object and a newline (the file comment).
  std::string json() const;

  /// Writes json() to \p Path (a regular file, replaced: support/OutputFile.h).
  Error write(const std::string &Path) const;
};

} // namespace mlbridge

#endif // MLBRIDGE_SUPPORT_PLUGINDESCRIPTION_H

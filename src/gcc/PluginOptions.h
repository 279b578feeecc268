//===- gcc/PluginOptions.h - Configuration of the GCC plugin ----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What the GCC plugin is told: plugin arguments
/// (-fplugin-arg-mlbridge_gcc-KEY=VALUE), each with an environment-variable
/// fallback (MLBRIDGE_GCC_KEY, upper case, '-' as '_') for build systems
/// that cannot pass compiler flags through. This file does not include
/// GCC's headers.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_GCC_PLUGINOPTIONS_H
#define MLBRIDGE_SRC_GCC_PLUGINOPTIONS_H

#include "support/PluginSettings.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mlbridge {
namespace gccplugin {

/// The largest factor max-unroll accepts.
constexpr int64_t MaxUnrollLimit = 1024;

/// The plugin's configuration.
struct PluginOptions {
  /// The runner configuration (mlbridge_runner_create's string form);
  /// empty or "none": no model, GCC decides.
  std::string Runner;
  /// The largest factor a model may answer (larger answers fall back).
  int64_t MaxUnroll = 16;
  /// The decision log's path (JSON lines, appended) when set.
  std::string LogPath;
  /// Where the statistics record of each translation unit is appended
  /// (support/RunStats.h) when set.
  std::string StatsPath;
  /// Where the plugin writes its description (support/PluginDescription.h)
  /// when set; it then decides nothing.
  std::string DescribePath;
  /// What was wrong with the arguments ("" when nothing); the plugin then
  /// leaves every loop to GCC.
  std::string Problem;
};

/// The plugin's options, declared once (support/PluginSettings.h).
const std::vector<OptionSpec> &pluginOptionSpecs();

/// Resolves the options from the plugin's (key, value) arguments, then the
/// environment (\p GetEnv, e.g. std::getenv) for the keys not given.
PluginOptions
parsePluginOptions(const std::vector<std::pair<std::string, std::string>> &Args,
                   const std::function<const char *(const char *)> &GetEnv);

} // namespace gccplugin
} // namespace mlbridge

#endif // MLBRIDGE_SRC_GCC_PLUGINOPTIONS_H

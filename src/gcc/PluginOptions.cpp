//===- gcc/PluginOptions.cpp - Configuration of the GCC plugin ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PluginOptions.h"

#include "support/PluginSettings.h"

namespace mlbridge {
namespace gccplugin {

PluginOptions
parsePluginOptions(const std::vector<std::pair<std::string, std::string>> &Args,
                   const std::function<const char *(const char *)> &GetEnv) {
  // The plugin's options, declared once (support/PluginSettings.h).
  static const std::vector<OptionSpec> Specs = {
      {"runner", OptionKind::Text},
      {"max-unroll", OptionKind::Integer, 1, MaxUnrollLimit},
      {"log", OptionKind::Text},
      {"stats", OptionKind::Text},
  };
  PluginSettings Settings = PluginSettings::resolve(
      "GCC", Specs, Args, "-fplugin-arg-mlbridge_gcc-", GetEnv);
  PluginOptions O;
  O.Problem = Settings.Problem;
  O.Runner = Settings.text("runner");
  O.MaxUnroll = Settings.integer("max-unroll", O.MaxUnroll);
  O.LogPath = Settings.text("log");
  O.StatsPath = Settings.text("stats");
  return O;
}

} // namespace gccplugin
} // namespace mlbridge

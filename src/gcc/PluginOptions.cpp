//===- gcc/PluginOptions.cpp - Configuration of the GCC plugin ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PluginOptions.h"

#include "support/PluginSettings.h"

namespace mlbridge {
namespace gccplugin {

const std::vector<OptionSpec> &pluginOptionSpecs() {
  static const std::vector<OptionSpec> Specs = {
      {"runner", OptionKind::Text},
      {"max-unroll", OptionKind::Integer, 1, MaxUnrollLimit},
      {"log", OptionKind::Text},
      {"stats", OptionKind::Text},
      {"describe", OptionKind::Text},
  };
  return Specs;
}

PluginOptions
parsePluginOptions(const std::vector<std::pair<std::string, std::string>> &Args,
                   const std::function<const char *(const char *)> &GetEnv) {
  PluginSettings Settings = PluginSettings::resolve(
      "GCC", pluginOptionSpecs(), Args, "-fplugin-arg-mlbridge_gcc-", GetEnv);
  PluginOptions O;
  O.Problem = Settings.Problem;
  O.Runner = Settings.text("runner");
  O.MaxUnroll = Settings.integer("max-unroll", O.MaxUnroll);
  O.LogPath = Settings.text("log");
  O.StatsPath = Settings.text("stats");
  O.DescribePath = Settings.text("describe");
  return O;
}

} // namespace gccplugin
} // namespace mlbridge

//===- gcc/PluginOptions.cpp - Configuration of the GCC plugin ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "PluginOptions.h"

#include <cerrno>
#include <cstdlib>

namespace mlbridge {
namespace gccplugin {

namespace {

/// The plugin's keys and their environment variables.
struct Key {
  const char *Name;
  const char *Env;
};
const Key Keys[] = {{"runner", "MLBRIDGE_GCC_RUNNER"},
                    {"max-unroll", "MLBRIDGE_GCC_MAX_UNROLL"},
                    {"log", "MLBRIDGE_GCC_LOG"},
                    {"stats", "MLBRIDGE_GCC_STATS"}};

/// Sets \p Key of \p O to \p Value; false and O.Problem set when invalid.
bool apply(PluginOptions &O, const std::string &Key, const std::string &Value,
           const std::string &From) {
  if (Key == "runner") {
    O.Runner = Value;
  } else if (Key == "log") {
    O.LogPath = Value;
  } else if (Key == "stats") {
    O.StatsPath = Value;
  } else if (Key == "max-unroll") {
    char *End = nullptr;
    errno = 0;
    long long N = std::strtoll(Value.c_str(), &End, 10);
    if (Value.empty() || *End || errno || N < 1 || N > MaxUnrollLimit) {
      O.Problem = From + ": max-unroll must be an integer in [1, " +
                  std::to_string(MaxUnrollLimit) + "], not '" + Value + "'";
      return false;
    }
    O.MaxUnroll = N;
  } else {
    O.Problem = From + ": unknown option '" + Key +
                "' (known: runner, max-unroll, log, stats)";
    return false;
  }
  return true;
}

} // namespace

PluginOptions
parsePluginOptions(const std::vector<std::pair<std::string, std::string>> &Args,
                   const std::function<const char *(const char *)> &GetEnv) {
  PluginOptions O;
  std::vector<std::string> Given;
  for (const auto &[Key, Value] : Args) {
    if (!apply(O, Key, Value, "-fplugin-arg-mlbridge_gcc-" + Key))
      return O;
    Given.push_back(Key);
  }
  for (const Key &K : Keys) {
    bool IsGiven = false;
    for (const std::string &G : Given)
      IsGiven = IsGiven || G == K.Name;
    const char *Value = IsGiven ? nullptr : GetEnv(K.Env);
    if (Value && *Value && !apply(O, K.Name, Value, K.Env))
      return O;
  }
  return O;
}

} // namespace gccplugin
} // namespace mlbridge

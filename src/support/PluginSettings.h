//===- support/PluginSettings.h - One option parser for the plugins -*- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// How every mlbridge plugin reads its options (the LLVM inline advisor, the
/// GCC unroll plugin, the MLIR tiling pass): each declares them once, in a
/// table of OptionSpec (key, kind, help); what its compiler's command line
/// gave (LLVM's -mlbridge-KEY, GCC's -fplugin-arg-mlbridge_gcc-KEY, the MLIR
/// pass's KEY=) is handed over as (key, value) pairs, and an option not
/// given there is read from the environment variable
/// MLBRIDGE_<PLUGIN>_<KEY> (upper case, '-' as '_'), for build systems that
/// cannot pass compiler flags through. Values are checked by kind; an
/// unknown key or a bad value is a Problem, and the plugin then leaves every
/// decision to the compiler.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SUPPORT_PLUGINSETTINGS_H
#define MLBRIDGE_SUPPORT_PLUGINSETTINGS_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlbridge {

/// What values an option takes.
enum class OptionKind {
  /// Any text (a path, a runner configuration).
  Text,
  /// A whole number within [Min, Max].
  Integer,
  /// 1/true or 0/false.
  Flag,
};

/// One option a plugin declares.
struct OptionSpec {
  /// The key, as on the command line ("runner", "max-unroll").
  const char *Key;
  OptionKind Kind;
  /// The bounds of an Integer option.
  int64_t Min = INT64_MIN;
  int64_t Max = INT64_MAX;
};

/// A plugin's options, resolved (see the file comment).
class PluginSettings {
public:
  /// Reads the environment variable of a name, or null (std::getenv).
  using GetEnv = std::function<const char *(const char *)>;

  /// The process's environment (std::getenv).
  static const char *processEnv(const char *Name);

  /// Resolves \p Specs for the plugin \p Plugin ("INLINE", "GCC", "MLIR"):
  /// \p Given first (where \p FlagPrefix names the flag, e.g.
  /// "-fplugin-arg-mlbridge_gcc-", for messages), then the environment
  /// \p Env reads.
  static PluginSettings
  resolve(const char *Plugin, const std::vector<OptionSpec> &Specs,
          const std::vector<std::pair<std::string, std::string>> &Given,
          const std::string &FlagPrefix, const GetEnv &Env = processEnv);

  /// The environment variable of \p Key for \p Plugin.
  static std::string variable(const char *Plugin, const std::string &Key);

  /// The text of \p Key ("" when not set).
  std::string text(const std::string &Key) const;
  /// Whether \p Key was set (on the command line or in the environment).
  bool has(const std::string &Key) const;
  /// The number of an Integer option, or \p Default when not set.
  int64_t integer(const std::string &Key, int64_t Default) const;
  /// The value of a Flag option (false when not set).
  bool flag(const std::string &Key) const;

  /// What was wrong ("" when nothing): the first unknown key or bad value,
  /// naming where it came from.
  std::string Problem;

private:
  std::map<std::string, std::string> Values;
  std::map<std::string, int64_t> Numbers;
};

} // namespace mlbridge

#endif // MLBRIDGE_SUPPORT_PLUGINSETTINGS_H

//===- common/CommandLine.h - Pieces of the tools' options -----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The pieces of a command line mlbridge-phase-service and
/// mlbridge-pipeline-clang read the same way: `--name=value` or `--name
/// value`, and whole numbers.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TOOLS_COMMON_COMMANDLINE_H
#define MLBRIDGE_TOOLS_COMMON_COMMANDLINE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace mlbridge::tools {

/// An argument split at its first '=' when it is a long option
/// (`--name=value`): Name, and the Value written inline; otherwise Name is
/// the whole argument and Inline is false.
struct Argument {
  std::string_view Name;
  std::string_view Value;
  bool Inline = false;
};

/// \p Arg split as Argument says.
inline Argument splitArgument(std::string_view Arg) {
  size_t Eq = Arg.find('=');
  if (Arg.substr(0, 2) != "--" || Eq == std::string_view::npos)
    return {Arg, {}, false};
  return {Arg.substr(0, Eq), Arg.substr(Eq + 1), true};
}

/// \p Text as a whole number of at most 12 digits, or nothing.
inline std::optional<int64_t> parseCount(std::string_view Text) {
  if (Text.empty() || Text.size() > 12)
    return std::nullopt;
  int64_t Value = 0;
  for (char C : Text) {
    if (C < '0' || C > '9')
      return std::nullopt;
    Value = Value * 10 + (C - '0');
  }
  return Value;
}

} // namespace mlbridge::tools

#endif // MLBRIDGE_TOOLS_COMMON_COMMANDLINE_H

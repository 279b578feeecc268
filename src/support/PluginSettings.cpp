//===- support/PluginSettings.cpp - One option parser for the plugins -----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/PluginSettings.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace mlbridge {

namespace {

const OptionSpec *find(const std::vector<OptionSpec> &Specs,
                       const std::string &Key) {
  for (const OptionSpec &S : Specs)
    if (Key == S.Key)
      return &S;
  return nullptr;
}

std::string known(const std::vector<OptionSpec> &Specs) {
  std::string Out;
  for (const OptionSpec &S : Specs)
    Out += (Out.empty() ? "" : ", ") + std::string(S.Key);
  return Out;
}

/// Checks \p Value against \p S; the number of an Integer or Flag option in
/// \p Number. False and \p Problem set when it does not fit.
bool check(const OptionSpec &S, const std::string &Value,
           const std::string &From, int64_t &Number, std::string &Problem) {
  switch (S.Kind) {
  case OptionKind::Text:
    return true;
  case OptionKind::Flag:
    if (Value == "1" || Value == "true" || Value.empty()) {
      Number = 1;
      return true;
    }
    if (Value == "0" || Value == "false") {
      Number = 0;
      return true;
    }
    Problem = From + " must be 1 or 0, not '" + Value + "'";
    return false;
  case OptionKind::Integer: {
    char *End = nullptr;
    errno = 0;
    long long N = std::strtoll(Value.c_str(), &End, 10);
    if (Value.empty() || *End || errno || N < S.Min || N > S.Max) {
      Problem = From + " must be an integer in [" + std::to_string(S.Min) +
                ", " + std::to_string(S.Max) + "], not '" + Value + "'";
      return false;
    }
    Number = N;
    return true;
  }
  }
  return true;
}

} // namespace

std::string PluginSettings::variable(const char *Plugin,
                                     const std::string &Key) {
  std::string Name = std::string("MLBRIDGE_") + Plugin + "_";
  for (char C : Key)
    Name.push_back(C == '-' ? '_'
                            : static_cast<char>(
                                  std::toupper(static_cast<unsigned char>(C))));
  return Name;
}

const char *PluginSettings::processEnv(const char *Name) {
  return std::getenv(Name);
}

PluginSettings PluginSettings::resolve(
    const char *Plugin, const std::vector<OptionSpec> &Specs,
    const std::vector<std::pair<std::string, std::string>> &Given,
    const std::string &FlagPrefix, const GetEnv &Env) {
  PluginSettings Out;
  auto Set = [&](const OptionSpec &S, const std::string &Value,
                 const std::string &From) {
    int64_t Number = 0;
    if (!check(S, Value, From, Number, Out.Problem))
      return false;
    Out.Values[S.Key] = Value;
    if (S.Kind != OptionKind::Text)
      Out.Numbers[S.Key] = Number;
    return true;
  };
  for (const auto &[Key, Value] : Given) {
    const OptionSpec *S = find(Specs, Key);
    if (!S) {
      Out.Problem = FlagPrefix + Key + ": unknown option '" + Key +
                    "' (known: " + known(Specs) + ")";
      return Out;
    }
    if (!Set(*S, Value, FlagPrefix + Key))
      return Out;
  }
  for (const OptionSpec &S : Specs) {
    if (Out.Values.count(S.Key))
      continue;
    const std::string Name = variable(Plugin, S.Key);
    const char *Value = Env(Name.c_str());
    if (Value && *Value && !Set(S, Value, Name))
      return Out;
  }
  return Out;
}

std::string PluginSettings::text(const std::string &Key) const {
  auto It = Values.find(Key);
  return It == Values.end() ? std::string() : It->second;
}

bool PluginSettings::has(const std::string &Key) const {
  return Values.count(Key) != 0;
}

int64_t PluginSettings::integer(const std::string &Key, int64_t Default) const {
  auto It = Numbers.find(Key);
  return It == Numbers.end() ? Default : It->second;
}

bool PluginSettings::flag(const std::string &Key) const {
  return integer(Key, 0) != 0;
}

} // namespace mlbridge

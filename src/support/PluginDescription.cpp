//===- support/PluginDescription.cpp - A plugin describes itself ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/PluginDescription.h"

#include "support/Json.h"
#include "support/OutputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mlbridge {

namespace {

const char *kindName(OptionKind Kind) {
  switch (Kind) {
  case OptionKind::Text:
    return "text";
  case OptionKind::Integer:
    return "integer";
  case OptionKind::Flag:
    return "flag";
  }
  return "text";
}

void appendMember(std::string &Out, const char *Key) {
  if (Out.back() != '{' && Out.back() != '[')
    Out += ',';
  json::appendString(Out, Key);
  Out += ':';
}

void appendSpecs(std::string &Out, const char *Key,
                 const std::vector<TensorSpec> &Specs) {
  appendMember(Out, Key);
  appendJSONArray(Out, Specs);
}

} // namespace

std::string PluginDescription::json() const {
  std::string Out = "{";
  appendMember(Out, "tool");
  json::appendString(Out, Tool);
  appendMember(Out, "options");
  Out += '[';
  for (const OptionSpec &S : Options) {
    Out += Out.back() == '[' ? "{" : ",{";
    appendMember(Out, "key");
    json::appendString(Out, S.Key);
    appendMember(Out, "kind");
    json::appendString(Out, kindName(S.Kind));
    if (S.Kind == OptionKind::Integer) {
      appendMember(Out, "min");
      json::appendInt(Out, S.Min);
      appendMember(Out, "max");
      json::appendInt(Out, S.Max);
    }
    appendMember(Out, "flag");
    json::appendString(Out, Before + S.Key + After);
    appendMember(Out, "variable");
    json::appendString(Out, PluginSettings::variable(Plugin.c_str(), S.Key));
    Out += '}';
  }
  Out += ']';
  appendSpecs(Out, "features", Features);
  appendSpecs(Out, "answers", Answers);
  Out += "}\n";
  return Out;
}

Error PluginDescription::write(const std::string &Path) const {
  auto Opened = openOutputFile(Path, O_TRUNC, "the plugin's description");
  if (!Opened)
    return Opened.takeError();
  const std::string Text = json();
  size_t Done = 0;
  int Why = 0;
  while (Done < Text.size()) {
    ssize_t N = ::write(*Opened, Text.data() + Done, Text.size() - Done);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      Why = N < 0 ? errno : EIO;
      break;
    }
    Done += size_t(N);
  }
  if (::close(*Opened) != 0 && !Why)
    Why = errno;
  if (Why)
    return makeError(ErrorCode::IO, "cannot write the plugin's description '" +
                                        Path + "': " + std::strerror(Why));
  return Error::success();
}

} // namespace mlbridge

//===- support/PluginDescription.cpp - A plugin describes itself ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/PluginDescription.h"

#include "support/Json.h"
#include "support/OutputFile.h"

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

std::string specsJSON(const std::vector<TensorSpec> &Specs) {
  std::string Out;
  appendJSONArray(Out, Specs);
  return Out;
}

} // namespace

std::string PluginDescription::json() const {
  std::string List = "[";
  for (const OptionSpec &S : Options) {
    json::ObjectLine Option;
    Option.string("key", S.Key).string("kind", kindName(S.Kind));
    if (S.Kind == OptionKind::Integer)
      Option.integer("min", S.Min).integer("max", S.Max);
    Option.string("flag", Before + S.Key + After)
        .string("variable", PluginSettings::variable(Plugin.c_str(), S.Key));
    List += (List.size() > 1 ? "," : "") + Option.object();
  }
  List += ']';
  return json::ObjectLine()
      .string("tool", Tool)
      .raw("options", List)
      .raw("features", specsJSON(Features))
      .raw("answers", specsJSON(Answers))
      .line();
}

Error PluginDescription::write(const std::string &Path) const {
  return writeOutputFile(Path, json(), "the plugin's description");
}

} // namespace mlbridge

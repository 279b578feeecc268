//===- support/RunStats.cpp - One statistics record for every tool --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/RunStats.h"
#include "support/AppendFile.h"
#include "support/Json.h"

namespace mlbridge {

RunStats &RunStats::detail(std::string Key, int64_t V) {
  std::string Text;
  json::appendInt(Text, V);
  Details.emplace_back(std::move(Key), std::move(Text));
  return *this;
}

RunStats &RunStats::detailNumber(std::string Key, double V) {
  std::string Text;
  json::appendDouble(Text, V);
  Details.emplace_back(std::move(Key), std::move(Text));
  return *this;
}

RunStats &RunStats::detailBool(std::string Key, bool V) {
  Details.emplace_back(std::move(Key), V ? "true" : "false");
  return *this;
}

RunStats &RunStats::detailString(std::string Key, const std::string &V) {
  std::string Text;
  json::appendString(Text, V);
  Details.emplace_back(std::move(Key), std::move(Text));
  return *this;
}

RunStats &RunStats::detailRaw(std::string Key, std::string Json) {
  Details.emplace_back(std::move(Key), std::move(Json));
  return *this;
}

std::string RunStats::line() const {
  json::ObjectLine L;
  L.string("tool", Tool)
      .string("unit", Unit)
      .string("runner", Runner)
      .integer("decisions", static_cast<int64_t>(Decisions))
      .integer("answered", static_cast<int64_t>(Answered))
      .integer("fallbacks", static_cast<int64_t>(Fallbacks));
  if (FirstError.empty())
    L.raw("first_error", "null");
  else
    L.string("first_error", FirstError);
  L.begin("details");
  for (const auto &[Key, Json] : Details)
    L.raw(Key, Json);
  L.end();
  return L.line();
}

bool RunStats::append(const std::string &Path, std::string &Problem) const {
  AppendFile File;
  if (!File.open(Path, Problem))
    return false;
  if (!File.append(line())) {
    Problem = "cannot write " + Path;
    return false;
  }
  return true;
}

} // namespace mlbridge

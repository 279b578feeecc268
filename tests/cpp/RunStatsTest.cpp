//===- RunStatsTest.cpp - The statistics record, golden-tested ------------===//
//
// tests/golden/run_stats.json holds records of every tool and the exact line
// each must be written as; tests/python/test_run_stats.py reads the same
// lines back into the same values.
//
//===----------------------------------------------------------------------===//

#include "support/RunStats.h"

#include "TestHelpers.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <unistd.h>

using namespace mlbridge;

namespace {
nlohmann::json goldenRecords() {
  std::ifstream In(std::string(MLBRIDGE_SOURCE_DIR) +
                   "/tests/golden/run_stats.json");
  return nlohmann::json::parse(In);
}

RunStats fromGolden(const nlohmann::json &Case) {
  RunStats S;
  S.Tool = Case["tool"];
  S.Unit = Case["unit"];
  S.Runner = Case["runner"];
  S.Decisions = Case["decisions"];
  S.Answered = Case["answered"];
  S.Fallbacks = Case["fallbacks"];
  S.FirstError = Case["first_error"];
  for (const auto &Pair : Case["details"]) {
    const std::string Key = Pair[0];
    const nlohmann::json &V = Pair[1];
    if (V.is_null())
      S.detailRaw(Key, "null");
    else if (V.is_boolean())
      S.detailBool(Key, V.get<bool>());
    else if (V.is_number_integer())
      S.detail(Key, V.get<int64_t>());
    else if (V.is_number())
      S.detailNumber(Key, V.get<double>());
    else
      S.detailString(Key, V.get<std::string>());
  }
  return S;
}
} // namespace

TEST(RunStats, EveryToolsRecordIsWrittenAsTheGoldenLine) {
  nlohmann::json Cases = goldenRecords();
  ASSERT_EQ(Cases.size(), 5u);
  for (const auto &Case : Cases)
    EXPECT_EQ(fromGolden(Case).line(), Case["line"].get<std::string>())
        << Case["tool"];
}

TEST(RunStats, RecordsAreAppendedOneLineEach) {
  std::string Path = ::testing::TempDir() + "/mlbridge-run-stats-" +
                     std::to_string(::getpid()) + ".jsonl";
  ::unlink(Path.c_str());
  nlohmann::json Cases = goldenRecords();
  std::string Expected, Problem;
  for (const auto &Case : Cases) {
    ASSERT_TRUE(fromGolden(Case).append(Path, Problem)) << Problem;
    Expected += Case["line"].get<std::string>();
  }
  std::ifstream In(Path);
  std::string Text((std::istreambuf_iterator<char>(In)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(Text, Expected);
  ::unlink(Path.c_str());
  EXPECT_FALSE(
      fromGolden(Cases[0]).append("/nonexistent/dir/s.jsonl", Problem));
  EXPECT_FALSE(Problem.empty());
}

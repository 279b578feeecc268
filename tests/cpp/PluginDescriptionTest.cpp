//===- PluginDescriptionTest.cpp - A plugin's description, golden-tested --===//
//
// tests/golden/plugin_description.json holds descriptions and the exact line
// each must be written as; tests/python/test_plugin_description.py reads the
// same lines back into the same values.
//
//===----------------------------------------------------------------------===//

#include "support/PluginDescription.h"

#include "TestHelpers.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <unistd.h>

using namespace mlbridge;

namespace {
nlohmann::json goldenCases() {
  std::ifstream In(std::string(MLBRIDGE_SOURCE_DIR) +
                   "/tests/golden/plugin_description.json");
  return nlohmann::json::parse(In);
}

OptionKind kindOf(const std::string &Name) {
  return Name == "integer" ? OptionKind::Integer
         : Name == "flag"  ? OptionKind::Flag
                           : OptionKind::Text;
}

std::vector<TensorSpec> specsOf(const nlohmann::json &List) {
  std::vector<TensorSpec> Specs;
  for (const auto &Spec : List) {
    auto Parsed = TensorSpec::fromJSON(Spec.dump());
    EXPECT_TRUE(Parsed) << Spec.dump();
    if (Parsed)
      Specs.push_back(*Parsed);
  }
  return Specs;
}

/// The case's description; its option keys live in \p Keys (OptionSpec
/// holds a pointer to the key).
PluginDescription fromGolden(const nlohmann::json &Case,
                             std::vector<std::string> &Keys) {
  PluginDescription D;
  D.Tool = Case["tool"];
  D.Plugin = Case["plugin"];
  D.Before = Case["before"];
  D.After = Case["after"];
  Keys.clear();
  Keys.reserve(Case["options"].size());
  for (const auto &Option : Case["options"]) {
    Keys.push_back(Option[0].get<std::string>());
    OptionSpec S{Keys.back().c_str(), kindOf(Option[1])};
    if (S.Kind == OptionKind::Integer) {
      S.Min = Option[2].get<int64_t>();
      S.Max = Option[3].get<int64_t>();
    }
    D.Options.push_back(S);
  }
  D.Features = specsOf(Case["features"]);
  D.Answers = specsOf(Case["answers"]);
  return D;
}
} // namespace

TEST(PluginDescription, IsWrittenAsTheGoldenLine) {
  nlohmann::json Cases = goldenCases();
  ASSERT_EQ(Cases.size(), 2u);
  std::vector<std::string> Keys;
  for (const auto &Case : Cases)
    EXPECT_EQ(fromGolden(Case, Keys).json(), Case["line"].get<std::string>())
        << Case["tool"];
}

TEST(PluginDescription, WriteReplacesTheFileAndRefusesWhatIsNotOne) {
  std::string Path = ::testing::TempDir() + "/mlbridge-description-" +
                     std::to_string(::getpid()) + ".json";
  {
    std::ofstream Old(Path);
    Old << std::string(10000, 'x');
  }
  nlohmann::json Cases = goldenCases();
  std::vector<std::string> Keys;
  PluginDescription D = fromGolden(Cases[0], Keys);
  ASSERT_FALSE(D.write(Path));
  std::ifstream In(Path);
  std::string Text((std::istreambuf_iterator<char>(In)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(Text, Cases[0]["line"].get<std::string>());
  ::unlink(Path.c_str());
  Error E = D.write(::testing::TempDir());
  ASSERT_TRUE(E);
  EXPECT_NE(E.message().find("description"), std::string::npos) << E.message();
}

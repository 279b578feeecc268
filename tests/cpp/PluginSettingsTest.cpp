//===- PluginSettingsTest.cpp - The plugins' one option parser ------------===//
//
// support/PluginSettings.h: options given on the command line win over
// MLBRIDGE_<PLUGIN>_<KEY>; values are checked by kind; an unknown key or a
// bad value is a Problem naming where it came from.
//
//===----------------------------------------------------------------------===//

#include "support/PluginSettings.h"

#include "TestHelpers.h"

#include <map>

using namespace mlbridge;

namespace {
const std::vector<OptionSpec> Specs = {
    {"runner", OptionKind::Text},
    {"max-unroll", OptionKind::Integer, 1, 1024},
    {"compare-default", OptionKind::Flag},
};

PluginSettings resolve(std::vector<std::pair<std::string, std::string>> Given,
                       std::map<std::string, std::string> Env) {
  return PluginSettings::resolve(
      "GCC", Specs, Given, "-fplugin-arg-mlbridge_gcc-",
      [Env](const char *Name) -> const char * {
        auto It = Env.find(Name);
        return It == Env.end() ? nullptr : It->second.c_str();
      });
}
} // namespace

TEST(PluginSettings, TheCommandLineWinsOverTheEnvironment) {
  PluginSettings S = resolve({{"runner", "constant:4"}},
                             {{"MLBRIDGE_GCC_RUNNER", "constant:8"},
                              {"MLBRIDGE_GCC_MAX_UNROLL", "32"},
                              {"MLBRIDGE_GCC_COMPARE_DEFAULT", "1"}});
  EXPECT_EQ(S.Problem, "");
  EXPECT_EQ(S.text("runner"), "constant:4");
  EXPECT_EQ(S.integer("max-unroll", 16), 32);
  EXPECT_TRUE(S.flag("compare-default"));
  EXPECT_TRUE(S.has("runner"));
  PluginSettings None = resolve({}, {{"MLBRIDGE_GCC_RUNNER", ""}});
  EXPECT_FALSE(None.has("runner"));
  EXPECT_EQ(None.integer("max-unroll", 16), 16);
  EXPECT_FALSE(None.flag("compare-default"));
  EXPECT_EQ(PluginSettings::variable("INLINE", "grpc-target"),
            "MLBRIDGE_INLINE_GRPC_TARGET");
}

TEST(PluginSettings, BadValuesAndUnknownKeysAreProblemsNamingTheirSource) {
  EXPECT_EQ(resolve({{"unroll", "3"}}, {}).Problem,
            "-fplugin-arg-mlbridge_gcc-unroll: unknown option 'unroll' "
            "(known: runner, max-unroll, compare-default)");
  EXPECT_EQ(resolve({{"max-unroll", "0"}}, {}).Problem,
            "-fplugin-arg-mlbridge_gcc-max-unroll must be an integer in [1, "
            "1024], not '0'");
  EXPECT_EQ(resolve({}, {{"MLBRIDGE_GCC_MAX_UNROLL", "8x"}}).Problem,
            "MLBRIDGE_GCC_MAX_UNROLL must be an integer in [1, 1024], not "
            "'8x'");
  EXPECT_EQ(resolve({}, {{"MLBRIDGE_GCC_MAX_UNROLL", "99999999999999999999"}})
                .Problem.find("must be an integer"),
            size_t(24));
  EXPECT_EQ(resolve({}, {{"MLBRIDGE_GCC_COMPARE_DEFAULT", "yes"}}).Problem,
            "MLBRIDGE_GCC_COMPARE_DEFAULT must be 1 or 0, not 'yes'");
  EXPECT_FALSE(resolve({{"compare-default", "0"}}, {}).flag("compare-default"));
}

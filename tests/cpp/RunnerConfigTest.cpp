//===- RunnerConfigTest.cpp - Runner configurations and createRunner ------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The string form against the golden vectors the Python tests check too
// (tests/golden/runner_configs.json), and createRunner() with the core
// factories.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/RunnerConfig.h"
#include "mlbridge/PipeModelRunner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace mlbridge;

namespace {

nlohmann::json golden() {
  std::ifstream In(std::string(MLBRIDGE_SOURCE_DIR) +
                   "/tests/golden/runner_configs.json");
  std::stringstream S;
  S << In.rdbuf();
  return nlohmann::json::parse(S.str());
}

/// The configuration a golden case describes.
RunnerConfig expected(const nlohmann::json &Defaults,
                      const nlohmann::json &Case) {
  nlohmann::json F = Defaults;
  for (auto It = Case.begin(); It != Case.end(); ++It)
    F[It.key()] = It.value();
  RunnerConfig C;
  C.Kind = *parseRunnerKind(F["kind"].get<std::string>());
  C.Argument = F["argument"].get<std::string>();
  std::string Protocol = F["protocol"].get<std::string>();
  C.Protocol = Protocol == "extended" ? PipeProtocol::Extended
               : Protocol == "shm"    ? PipeProtocol::SharedMemory
                                      : PipeProtocol::Mlgo;
  C.Serialization = *parseFormat(F["format"].get<std::string>());
  C.Streaming = F["streaming"].get<bool>();
  C.ConnectTimeout =
      std::chrono::milliseconds(F["connect_timeout_ms"].get<int64_t>());
  C.Timeout = std::chrono::milliseconds(F["timeout_ms"].get<int64_t>());
  C.Threads = F["threads"].get<int>();
  C.LazyLoad = F["load"].get<std::string>() == "lazy";
  C.MaxMessageBytes = F["max_message_bytes"].get<size_t>();
  return C;
}

TEST(RunnerConfigTest, GoldenValidConfigurations) {
  auto J = golden();
  ASSERT_FALSE(J["valid"].empty());
  for (const auto &Case : J["valid"]) {
    std::string Text = Case["text"];
    SCOPED_TRACE(Text);
    auto C = RunnerConfig::parse(Text);
    ASSERT_TRUE(bool(C)) << C.error().toString();
    EXPECT_EQ(*C, expected(J["defaults"], Case));
    EXPECT_EQ(C->str(), Case["canonical"].get<std::string>());
    auto Again = RunnerConfig::parse(C->str());
    ASSERT_TRUE(bool(Again));
    EXPECT_EQ(*Again, *C);
  }
}

TEST(RunnerConfigTest, GoldenInvalidConfigurations) {
  auto J = golden();
  ASSERT_FALSE(J["invalid"].empty());
  for (const auto &Case : J["invalid"]) {
    std::string Text = Case["text"];
    SCOPED_TRACE(Text);
    auto C = RunnerConfig::parse(Text);
    ASSERT_FALSE(bool(C));
    EXPECT_EQ(C.error().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(C.error().message().find(Case["error"].get<std::string>()),
              std::string::npos)
        << C.error().message();
  }
}

TEST(RunnerConfigTest, ConstantRunnerAnswersItsNumberInTheOutputType) {
  auto C = RunnerConfig::parse("constant:-3");
  ASSERT_TRUE(bool(C));
  auto R = createRunner(*C, {TensorSpec::of<float>("x", {4})},
                        {TensorSpec::of<int32_t>("decision", {1})});
  ASSERT_TRUE(bool(R)) << R.error().toString();
  auto D = (*R)->evaluate<int32_t>();
  ASSERT_TRUE(bool(D));
  EXPECT_EQ(*D, -3);
  EXPECT_FALSE((*R)->readsInput(0)); // no model reads anything
}

TEST(RunnerConfigTest, ConstantRunnerNeedsAScalarOutput) {
  auto R = createRunner(*RunnerConfig::parse("constant:1"), {},
                        {TensorSpec::of<int64_t>("decision", {2})});
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(R.error().code(), ErrorCode::TypeMismatch);
}

TEST(RunnerConfigTest, EchoRunnerCopiesItsInput) {
  auto R = createRunner(*RunnerConfig::parse("echo:inlining_default"),
                        {TensorSpec::of<float>("cost", {1}),
                         TensorSpec::of<int64_t>("inlining_default", {1})},
                        {TensorSpec::of<int64_t>("inlining_decision", {1})});
  ASSERT_TRUE(bool(R)) << R.error().toString();
  for (int64_t V : {0, 1, 0}) {
    *(*R)->input<int64_t>(1) = V;
    auto D = (*R)->evaluate<int64_t>();
    ASSERT_TRUE(bool(D));
    EXPECT_EQ(*D, V);
  }
  EXPECT_FALSE((*R)->readsInput(0));
  EXPECT_TRUE((*R)->readsInput(1)); // only the echoed input
}

TEST(RunnerConfigTest, EchoRunnerChecksItsInput) {
  RunnerConfig C = *RunnerConfig::parse("echo:missing");
  auto R = createRunner(C, {TensorSpec::of<int64_t>("x", {1})},
                        {TensorSpec::of<int64_t>("y", {1})});
  ASSERT_FALSE(bool(R));
  EXPECT_NE(R.error().message().find("missing"), std::string::npos);
  C.Argument = "x";
  R = createRunner(C, {TensorSpec::of<float>("x", {1})},
                   {TensorSpec::of<int64_t>("y", {1})});
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(R.error().code(), ErrorCode::TypeMismatch);
}

TEST(RunnerConfigTest, PipeRunnerFromAConfiguration) {
  auto C = RunnerConfig::parse("pipe,protocol=extended,format=json");
  ASSERT_TRUE(bool(C));
  auto R = createRunner(*C, {TensorSpec::of<int64_t>("x", {1})},
                        {TensorSpec::of<int64_t>("y", {1})});
  ASSERT_TRUE(bool(R)) << R.error().toString();
  // An empty channel: the runner made a private one.
  EXPECT_FALSE(static_cast<PipeModelRunner &>(**R).channelBase().empty());
}

TEST(RunnerConfigTest, KindsMissingFromTheFactoriesAreUnsupported) {
  auto C = RunnerConfig::parse("onnx:model.onnx");
  ASSERT_TRUE(bool(C));
  auto R = createRunner(*C, {TensorSpec::of<int64_t>("x", {1})},
                        {TensorSpec::of<int64_t>("y", {1})});
  ASSERT_FALSE(bool(R));
  EXPECT_EQ(R.error().code(), ErrorCode::Unsupported);
  EXPECT_NE(R.error().message().find("'onnx' runner is not available"),
            std::string::npos);
  RunnerFactories Empty;
  EXPECT_FALSE(Empty.has(RunnerKind::Pipe));
  EXPECT_TRUE(RunnerFactories::core().has(RunnerKind::Pipe));
}

TEST(RunnerConfigTest, FactoriesCanBeReplaced) {
  RunnerFactories F = RunnerFactories::core();
  bool Called = false;
  F.add(RunnerKind::Aot,
        [&](const RunnerConfig &, std::vector<TensorSpec>,
            std::vector<TensorSpec>) -> Expected<std::unique_ptr<ModelRunner>> {
          Called = true;
          return makeError(ErrorCode::Unsupported, "test factory");
        });
  auto R = createRunner(*RunnerConfig::parse("aot:x.so"), {}, {}, F);
  EXPECT_TRUE(Called);
  ASSERT_FALSE(bool(R));
}

} // namespace

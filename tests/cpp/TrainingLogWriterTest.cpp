//===- TrainingLogWriterTest.cpp - LLVM training-log output ---------------===//

#include "mlbridge/TrainingLogWriter.h"

#include "TestHelpers.h"

#include <cstdio>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;

TEST(TrainingLogWriter, WritesLLVMsFormat) {
  std::string Path = ::testing::TempDir() + "/mlbridge_log_test.log";
  std::vector<TensorSpec> F = {TensorSpec::of<int64_t>("x"),
                               TensorSpec::of<uint8_t>("b", {2})};
  {
    ASSERT_EXPECTED(
        W, TrainingLogWriter::create(Path, F, TensorSpec::of<float>("reward"),
                                     TensorSpec::of<int64_t>("decision")));
    ASSERT_OK(W->switchContext("f"));
    int64_t X = 10; // contains 0x0a: readers must not split on newlines
    uint8_t Bytes[2] = {'\n', 1};
    float Reward = 0.5f;
    const void *Data[] = {&X, Bytes};
    ASSERT_OK(W->logObservation(Data, &Reward));
    ASSERT_OK(W->logObservation(Data, &Reward));
    EXPECT_EQ(W->logObservation(Data).code(), ErrorCode::InvalidArgument);
    ASSERT_OK(W->flush());
  }
  std::string Log = readFile(Path);
  std::string Expected =
      R"({"features":[{"name":"x","type":"int64_t","port":0,"shape":[1]},)"
      R"({"name":"b","type":"uint8_t","port":0,"shape":[2]}],)"
      R"("score":{"name":"reward","type":"float","port":0,"shape":[1]},)"
      R"("advice":{"name":"decision","type":"int64_t","port":0,"shape":[1]}})"
      "\n{\"context\":\"f\"}\n";
  for (int Obs = 0; Obs < 2; ++Obs) {
    Expected += "{\"observation\":" + std::to_string(Obs) + "}\n";
    Expected += std::string("\x0a\0\0\0\0\0\0\0\x0a\x01\n", 11);
    Expected += "{\"outcome\":" + std::to_string(Obs) + "}\n";
    Expected += std::string("\0\0\0\x3f\n", 5);
  }
  EXPECT_EQ(Log, Expected);
  ::unlink(Path.c_str());
}

TEST(TrainingLogWriter, UnwritablePathIsAnError) {
  auto W = TrainingLogWriter::create("/nonexistent-dir/x.log",
                                     {TensorSpec::of<float>("a")});
  ASSERT_FALSE(bool(W));
  EXPECT_EQ(W.error().code(), ErrorCode::IO);
}

//===- TrainingLogWriterTest.cpp - LLVM training-log output ---------------===//

#include "mlbridge/TrainingLogWriter.h"

#include "TestHelpers.h"

#include <cstdio>
#include <sys/stat.h>
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

TEST(TrainingLogWriter, APathThatIsNotARegularFileIsRefused) {
  // What another user could plant in a shared directory: a FIFO (opening it
  // for writing blocked until a reader came), a symbolic link to a file of
  // ours (its target was truncated), a directory.
  char Template[] = "/tmp/mlbridge-log-XXXXXX";
  ASSERT_NE(::mkdtemp(Template), nullptr);
  std::string Dir = Template, Victim = Dir + "/victim";
  {
    std::FILE *F = std::fopen(Victim.c_str(), "w");
    ASSERT_NE(F, nullptr);
    std::fputs("keep me", F);
    std::fclose(F);
  }
  ASSERT_EQ(::mkfifo((Dir + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(::symlink(Victim.c_str(), (Dir + "/link").c_str()), 0);
  ASSERT_EQ(::mkdir((Dir + "/dir").c_str(), 0700), 0);
  for (const char *Name : {"fifo", "link", "dir"}) {
    auto W = TrainingLogWriter::create(Dir + "/" + Name,
                                       {TensorSpec::of<float>("a")});
    ASSERT_FALSE(bool(W)) << Name;
    EXPECT_EQ(W.error().code(), ErrorCode::IO);
    EXPECT_NE(W.error().message().find(Name), std::string::npos)
        << W.error().message();
  }
  EXPECT_EQ(readFile(Victim), "keep me");
  for (const char *Name : {"fifo", "link", "victim"})
    ::unlink((Dir + "/" + Name).c_str());
  ::rmdir((Dir + "/dir").c_str());
  ::rmdir(Dir.c_str());
}

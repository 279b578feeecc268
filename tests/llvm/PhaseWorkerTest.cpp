//===- PhaseWorkerTest.cpp - Training commands in a child process ---------===//
//
// The mechanism under serveTraining: a command that crashes its worker (as a
// pass dereferencing null would) or overruns its deadline fails alone; the
// next command runs in a fresh worker forked from the untouched parent.
//
//===----------------------------------------------------------------------===//

#include "llvm/PhaseWorker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

using namespace mlbridge;
using namespace mlbridge::phase;
using namespace std::chrono_literals;

namespace {
/// A handler counting the commands its worker carried out: command 7
/// crashes, command 8 hangs, command 5 ends.
PhaseWorker::Handler counting(int &Count) {
  return [&Count](int64_t C, int64_t Arg) {
    if (C == 7)
      std::raise(SIGSEGV);
    if (C == 8)
      std::this_thread::sleep_for(30s);
    ++Count;
    WorkerReply R;
    R.Obs.Steps = Count;
    R.Obs.Module = Arg;
    R.End = C == 5;
    R.Context = std::string(C == 9 ? 10000 : 3, 'x');
    return R;
  };
}
} // namespace

TEST(PhaseWorker, ACrashCostsOneCommandAndTheNextGetsAFreshWorker) {
  int Count = 0; // the parent's copy: never changed
  PhaseWorker W(counting(Count), 20s);
  auto A = W.run(0, 11);
  ASSERT_TRUE(bool(A)) << A.takeError().toString();
  EXPECT_EQ(A->Obs.Steps, 1);
  EXPECT_EQ(A->Obs.Module, 11);
  auto B = W.run(0, 12);
  ASSERT_TRUE(bool(B));
  EXPECT_EQ(B->Obs.Steps, 2); // the same worker kept its state
  auto Crash = W.run(7, 0);
  ASSERT_FALSE(bool(Crash));
  EXPECT_EQ(Crash.error().code(), ErrorCode::Broken);
  EXPECT_NE(Crash.error().message().find("crashed"), std::string::npos)
      << Crash.error().message();
  auto C = W.run(0, 13);
  ASSERT_TRUE(bool(C)) << C.takeError().toString();
  EXPECT_EQ(C->Obs.Steps, 1); // forked afresh from the parent
  EXPECT_EQ(Count, 0);
}

TEST(PhaseWorker, ACommandPastItsDeadlineStopsTheWorker) {
  int Count = 0;
  PhaseWorker W(counting(Count), 300ms);
  auto Hang = W.run(8, 0);
  ASSERT_FALSE(bool(Hang));
  EXPECT_EQ(Hang.error().code(), ErrorCode::Timeout);
  auto Next = W.run(0, 1);
  ASSERT_TRUE(bool(Next)) << Next.takeError().toString();
  EXPECT_EQ(Next->Obs.Steps, 1);
}

TEST(PhaseWorker, ContextsAreBoundedAndEndStopsTheWorker) {
  int Count = 0;
  PhaseWorker W(counting(Count), 20s);
  auto Long = W.run(9, 0);
  ASSERT_TRUE(bool(Long));
  EXPECT_EQ(Long->Context.size(), PhaseWorker::MaxContextBytes);
  auto End = W.run(5, 0);
  ASSERT_TRUE(bool(End));
  EXPECT_TRUE(End->End);
  auto After = W.run(0, 0); // a new worker after END
  ASSERT_TRUE(bool(After));
  EXPECT_EQ(After->Obs.Steps, 1);
}

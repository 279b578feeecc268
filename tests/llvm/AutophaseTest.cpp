//===- AutophaseTest.cpp - Autophase features of hand-written IR ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The 56 Autophase features of small modules whose counts are worked out by
// hand: CFG shapes (predecessors, successors, critical edges), phi nodes,
// integer constants of 32 and 64 bits, zeros and ones, memory instructions,
// calls returning integers, unary instructions, block sizes.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/Autophase.h"

#include "PhaseTestSupport.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

using namespace mlbridge::autophase;

namespace {

/// The features of \p IR by name.
std::map<std::string, int64_t> featuresOf(const char *IR) {
  llvm::LLVMContext Ctx;
  std::unique_ptr<llvm::Module> M = phase_test::parse(Ctx, IR);
  EXPECT_TRUE(M) << "the test IR does not parse";
  std::map<std::string, int64_t> Named;
  if (!M)
    return Named;
  FeatureVector V = computeFeatures(*M);
  for (size_t I = 0; I < NumFeatures; ++I)
    Named[std::string(FeatureNames[I])] = V[I];
  EXPECT_EQ(V[index(Feature::TotalInsts)], instructionCount(*M));
  return Named;
}

/// Checks \p Expected against \p Got; features not listed must be 0.
void expectFeatures(const std::map<std::string, int64_t> &Got,
                    const std::map<std::string, int64_t> &Expected) {
  for (const auto &[Name, Value] : Got) {
    auto It = Expected.find(Name);
    EXPECT_EQ(Value, It == Expected.end() ? 0 : It->second) << Name;
  }
  for (const auto &[Name, Value] : Expected)
    EXPECT_TRUE(Got.count(Name)) << "no feature " << Name;
}

TEST(Autophase, NamesAreCompilerGymsInOrder) {
  std::set<std::string_view> Unique(FeatureNames.begin(), FeatureNames.end());
  EXPECT_EQ(Unique.size(), NumFeatures);
  EXPECT_EQ(FeatureNames.front(), "BBNumArgsHi");
  EXPECT_EQ(FeatureNames[index(Feature::CriticalCount)], "CriticalCount");
  EXPECT_EQ(FeatureNames[index(Feature::NumGetElementPtrInst)],
            "NumGetElementPtrInst");
  EXPECT_EQ(FeatureNames[index(Feature::TotalInsts)], "TotalInsts");
  EXPECT_EQ(FeatureNames.back(), "testUnary");
  EXPECT_EQ(index(Feature::testUnary), NumFeatures - 1);
}

TEST(Autophase, DiamondWithPhi) {
  // entry: 0 preds, 2 succs; then/else: 1 pred, 1 succ; join: 2 preds, 0
  // succs, one phi of 2 incoming values. No critical edge.
  const char *IR = R"IR(
define i32 @f(i32 %x, i1 %c) {
entry:
  %a = add i32 %x, 1
  br i1 %c, label %then, label %else
then:
  %b = mul i32 %a, 3
  br label %join
else:
  %d = sub i32 %a, 0
  br label %join
join:
  %p = phi i32 [ %b, %then ], [ %d, %else ]
  ret i32 %p
}
declare i64 @g(i64)
)IR";
  expectFeatures(
      featuresOf(IR),
      {{"onePred", 2},      {"onePredOneSuc", 2},  {"oneSuccessor", 2},
       {"twoPred", 1},      {"twoSuccessor", 1},   {"BB03Phi", 1},
       {"BBNoPhi", 3},      {"BeginPhi", 1},       {"BBNumArgsLo", 1},
       {"ArgsPhi", 2},      {"BranchCount", 3},    {"UncondBranches", 2},
       {"NumBrInst", 3},    {"NumEdges", 4},       {"const32Bit", 3},
       {"numConstOnes", 1}, {"numConstZeroes", 1}, {"binaryConstArg", 3},
       {"NumAddInst", 1},   {"NumMulInst", 1},     {"NumSubInst", 1},
       {"NumPHIInst", 1},   {"NumRetInst", 1},     {"BlockLow", 4},
       {"TotalBlocks", 4},  {"TotalInsts", 8},     {"TotalFuncs", 2}});
}

TEST(Autophase, CriticalEdgeMemoryAndCalls) {
  // entry -> exit is critical (entry has 2 successors, exit 2
  // predecessors). The alloca's array size is an i32 1 operand.
  const char *IR = R"IR(
declare i64 @ext(i64)
declare void @sink(ptr)
define i64 @h(i64 %n, ptr %p) {
entry:
  %slot = alloca i64
  store i64 %n, ptr %slot
  %v = load i64, ptr %slot
  %c = icmp eq i64 %v, 0
  br i1 %c, label %exit, label %body
body:
  %q = getelementptr i64, ptr %p, i64 1
  %r = call i64 @ext(i64 %v)
  call void @sink(ptr %q)
  %t = trunc i64 %r to i32
  %z = zext i32 %t to i64
  br label %exit
exit:
  %res = phi i64 [ 0, %entry ], [ %z, %body ]
  ret i64 %res
}
)IR";
  expectFeatures(
      featuresOf(IR),
      {{"onePred", 1},      {"onePredOneSuc", 1},  {"oneSuccessor", 1},
       {"twoPred", 1},      {"twoSuccessor", 1},   {"CriticalCount", 1},
       {"NumEdges", 3},     {"BB03Phi", 1},        {"BBNoPhi", 2},
       {"BeginPhi", 1},     {"BBNumArgsLo", 1},    {"ArgsPhi", 2},
       {"BranchCount", 2},  {"UncondBranches", 1}, {"NumBrInst", 2},
       {"const32Bit", 1},   {"const64Bit", 3},     {"numConstZeroes", 2},
       {"numConstOnes", 2}, {"returnInt", 1},      {"NumAllocaInst", 1},
       {"NumStoreInst", 1}, {"NumLoadInst", 1},    {"NumGetElementPtrInst", 1},
       {"NumCallInst", 2},  {"NumICmpInst", 1},    {"NumTruncInst", 1},
       {"NumZExtInst", 1},  {"NumPHIInst", 1},     {"NumRetInst", 1},
       {"TotalMemInst", 6}, {"testUnary", 4},      {"BlockLow", 3},
       {"TotalBlocks", 3},  {"TotalInsts", 13},    {"TotalFuncs", 3}});
}

TEST(Autophase, SwitchManyPhisAndAMidSizeBlock) {
  // entry's switch has 3 successors; join has 3 predecessors (the edge
  // entry -> join is critical), 4 phis with 12 incoming values, and 15
  // instructions.
  const char *IR = R"IR(
define i32 @s(i32 %x) {
entry:
  switch i32 %x, label %join [ i32 1, label %a
                               i32 2, label %b ]
a:
  br label %join
b:
  br label %join
join:
  %p1 = phi i32 [ 0, %entry ], [ 1, %a ], [ 2, %b ]
  %p2 = phi i32 [ 3, %entry ], [ 4, %a ], [ 5, %b ]
  %p3 = phi i32 [ 6, %entry ], [ 7, %a ], [ 8, %b ]
  %p4 = phi i32 [ 9, %entry ], [ 10, %a ], [ 11, %b ]
  %s1 = add i32 %p1, %p2
  %s2 = add i32 %s1, %p3
  %s3 = add i32 %s2, %p4
  %s4 = add i32 %s3, %x
  %s5 = xor i32 %s4, %x
  %s6 = and i32 %s5, %x
  %s7 = or i32 %s6, %x
  %s8 = shl i32 %s7, %x
  %s9 = lshr i32 %s8, %x
  %s10 = ashr i32 %s9, %x
  ret i32 %s10
}
)IR";
  expectFeatures(
      featuresOf(IR),
      {{"onePred", 2},        {"onePredOneSuc", 2}, {"oneSuccessor", 2},
       {"morePreds", 1},      {"CriticalCount", 1}, {"NumEdges", 5},
       {"BBHiPhi", 1},        {"BBNoPhi", 3},       {"BeginPhi", 1},
       {"BBNumArgsHi", 1},    {"ArgsPhi", 12},      {"BranchCount", 2},
       {"UncondBranches", 2}, {"NumBrInst", 2},     {"const32Bit", 14},
       {"numConstZeroes", 1}, {"numConstOnes", 2},  {"NumPHIInst", 4},
       {"NumAddInst", 4},     {"NumXorInst", 1},    {"NumAndInst", 1},
       {"NumOrInst", 1},      {"NumShlInst", 1},    {"NumLShrInst", 1},
       {"NumAShrInst", 1},    {"NumRetInst", 1},    {"BlockLow", 3},
       {"BlockMid", 1},       {"TotalBlocks", 4},   {"TotalInsts", 18},
       {"TotalFuncs", 1}});
}

TEST(Autophase, CastsSelectsAndUnaryInstructions) {
  const char *IR = R"IR(
define i64 @u(i32 %x, float %f, ptr %p) {
  %n = fneg float %f
  %i = fptosi float %n to i32
  %b = bitcast i32 %i to float
  %w = sext i32 %x to i64
  %c = icmp sgt i32 %x, 0
  %s = select i1 %c, i64 %w, i64 7
  %fr = freeze i64 %s
  %l = load i64, ptr %p
  %r = add i64 %fr, %l
  ret i64 %r
}
)IR";
  expectFeatures(featuresOf(IR),
                 {{"BBNoPhi", 1},
                  {"BlockLow", 1},
                  {"TotalBlocks", 1},
                  {"TotalInsts", 10},
                  {"TotalFuncs", 1},
                  {"NumBitCastInst", 1},
                  {"NumSExtInst", 1},
                  {"NumICmpInst", 1},
                  {"NumSelectInst", 1},
                  {"NumLoadInst", 1},
                  {"NumAddInst", 1},
                  {"NumRetInst", 1},
                  {"TotalMemInst", 1},
                  {"const32Bit", 1},
                  {"const64Bit", 1},
                  {"numConstZeroes", 1},
                  // fneg, fptosi, bitcast, sext, load; not freeze (LLVM's
                  // isa<UnaryInstruction> does not accept it).
                  {"testUnary", 5}});
}

TEST(Autophase, AModuleWithoutFunctionsHasNoFeatures) {
  std::map<std::string, int64_t> Got = featuresOf("@g = global i32 1\n");
  expectFeatures(Got, {});
}

} // namespace

//===- mlbridge/llvm/Autophase.h - Autophase features -----------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The 56 static features of the Autophase paper (Huang et al., "AutoPhase:
/// Compiler Phase-Ordering for HLS with Deep Reinforcement Learning", FCCM
/// 2019), in the order and with the definitions of CompilerGym's `Autophase`
/// observation (its compiler_gym/third_party/autophase/InstCount.cc), and
/// the IR instruction count. Both are computed from a module's IR alone, in
/// one walk over every basic block of every function (declarations have no
/// blocks); nothing is printed, nothing is changed.
///
/// Per-block features classify each basic block by its number of CFG
/// successors (the terminator's successor operands, duplicates counted) and
/// predecessors (uses of the block by terminators, duplicates counted, as
/// llvm::predecessors() yields them). Operand features look at every operand
/// of every instruction. Part of the optional mlbridge_llvm library.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_LLVM_AUTOPHASE_H
#define MLBRIDGE_LLVM_AUTOPHASE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace llvm {
class Module;
} // namespace llvm

namespace mlbridge::autophase {

/// Number of Autophase features.
inline constexpr size_t NumFeatures = 56;

/// The features, in CompilerGym's order (the index of each in a
/// FeatureVector). "Blocks" are basic blocks of the whole module.
enum class Feature : unsigned {
  /// Blocks whose phi nodes have more than 5 incoming values in total.
  BBNumArgsHi,
  /// Blocks whose phi nodes have 1 to 5 incoming values in total.
  BBNumArgsLo,
  /// Blocks with exactly 1 predecessor.
  onePred,
  /// Blocks with exactly 1 predecessor and 1 successor.
  onePredOneSuc,
  /// Blocks with exactly 1 predecessor and 2 successors.
  onePredTwoSuc,
  /// Blocks with exactly 1 successor.
  oneSuccessor,
  /// Blocks with exactly 2 predecessors.
  twoPred,
  /// Blocks with exactly 2 predecessors and 1 successor.
  twoPredOneSuc,
  /// Blocks with exactly 2 predecessors and 2 successors.
  twoEach,
  /// Blocks with exactly 2 successors.
  twoSuccessor,
  /// Blocks with more than 2 predecessors.
  morePreds,
  /// Blocks with 1 to 3 phi nodes.
  BB03Phi,
  /// Blocks with more than 3 phi nodes.
  BBHiPhi,
  /// Blocks without phi nodes.
  BBNoPhi,
  /// Blocks whose first instruction is a phi node.
  BeginPhi,
  /// `br` instructions, conditional or not (same as NumBrInst).
  BranchCount,
  /// `call` instructions (not `invoke`) to a known function (a direct call,
  /// intrinsics included) whose return type is an integer type.
  returnInt,
  /// Critical CFG edges: from a block with several successors to a block
  /// with several predecessors (llvm::isCriticalEdge, one per successor
  /// operand).
  CriticalCount,
  /// CFG edges: successor operands of all terminators.
  NumEdges,
  /// Instruction operands that are 32-bit integer constants (`ConstantInt`
  /// of type i32; every occurrence counts).
  const32Bit,
  /// Instruction operands that are 64-bit integer constants (i64).
  const64Bit,
  /// Instruction operands that are the integer constant 0, of any width.
  numConstZeroes,
  /// Instruction operands that are the integer constant 1, of any width
  /// (`i1 true` included).
  numConstOnes,
  /// Unconditional `br` instructions.
  UncondBranches,
  /// Binary operators (add, sub, mul, div, rem, shifts, and, or, xor, their
  /// floating-point forms) with at least one constant operand.
  binaryConstArg,
  /// `ashr` instructions.
  NumAShrInst,
  /// `add` instructions (integer only; `fadd` is not counted).
  NumAddInst,
  /// `alloca` instructions.
  NumAllocaInst,
  /// `and` instructions.
  NumAndInst,
  /// Blocks of 15 to 500 instructions.
  BlockMid,
  /// Blocks of fewer than 15 instructions.
  BlockLow,
  /// `bitcast` instructions.
  NumBitCastInst,
  /// `br` instructions.
  NumBrInst,
  /// `call` instructions (intrinsics included; not `invoke`).
  NumCallInst,
  /// `getelementptr` instructions.
  NumGetElementPtrInst,
  /// `icmp` instructions.
  NumICmpInst,
  /// `lshr` instructions.
  NumLShrInst,
  /// `load` instructions.
  NumLoadInst,
  /// `mul` instructions.
  NumMulInst,
  /// `or` instructions.
  NumOrInst,
  /// `phi` instructions.
  NumPHIInst,
  /// `ret` instructions.
  NumRetInst,
  /// `sext` instructions.
  NumSExtInst,
  /// `select` instructions.
  NumSelectInst,
  /// `shl` instructions.
  NumShlInst,
  /// `store` instructions.
  NumStoreInst,
  /// `sub` instructions.
  NumSubInst,
  /// `trunc` instructions.
  NumTruncInst,
  /// `xor` instructions.
  NumXorInst,
  /// `zext` instructions.
  NumZExtInst,
  /// Basic blocks.
  TotalBlocks,
  /// Instructions (the same number as instructionCount()).
  TotalInsts,
  /// Memory instructions: getelementptr, load, store, call, invoke, alloca.
  TotalMemInst,
  /// Functions, declarations included (CompilerGym counts every function it
  /// visits, although its description says "non-external").
  TotalFuncs,
  /// Incoming values of all phi nodes.
  ArgsPhi,
  /// Instructions llvm::isa<llvm::UnaryInstruction> accepts: alloca, load,
  /// casts, fneg, extractvalue, va_arg (not freeze, although FreezeInst
  /// derives from UnaryInstruction).
  testUnary,
};

/// The feature names, indexed like Feature (the names CompilerGym uses).
inline constexpr std::array<std::string_view, NumFeatures> FeatureNames = {
    "BBNumArgsHi",
    "BBNumArgsLo",
    "onePred",
    "onePredOneSuc",
    "onePredTwoSuc",
    "oneSuccessor",
    "twoPred",
    "twoPredOneSuc",
    "twoEach",
    "twoSuccessor",
    "morePreds",
    "BB03Phi",
    "BBHiPhi",
    "BBNoPhi",
    "BeginPhi",
    "BranchCount",
    "returnInt",
    "CriticalCount",
    "NumEdges",
    "const32Bit",
    "const64Bit",
    "numConstZeroes",
    "numConstOnes",
    "UncondBranches",
    "binaryConstArg",
    "NumAShrInst",
    "NumAddInst",
    "NumAllocaInst",
    "NumAndInst",
    "BlockMid",
    "BlockLow",
    "NumBitCastInst",
    "NumBrInst",
    "NumCallInst",
    "NumGetElementPtrInst",
    "NumICmpInst",
    "NumLShrInst",
    "NumLoadInst",
    "NumMulInst",
    "NumOrInst",
    "NumPHIInst",
    "NumRetInst",
    "NumSExtInst",
    "NumSelectInst",
    "NumShlInst",
    "NumStoreInst",
    "NumSubInst",
    "NumTruncInst",
    "NumXorInst",
    "NumZExtInst",
    "TotalBlocks",
    "TotalInsts",
    "TotalMemInst",
    "TotalFuncs",
    "ArgsPhi",
    "testUnary",
};

/// One value per feature, indexed like Feature.
using FeatureVector = std::array<int64_t, NumFeatures>;

/// The index of \p F in a FeatureVector.
constexpr size_t index(Feature F) { return static_cast<size_t>(F); }

/// The 56 Autophase features of \p M.
FeatureVector computeFeatures(const llvm::Module &M);

/// The number of IR instructions in \p M: every instruction of every
/// defined function (llvm::Module::getInstructionCount()).
int64_t instructionCount(const llvm::Module &M);

} // namespace mlbridge::autophase

#endif // MLBRIDGE_LLVM_AUTOPHASE_H

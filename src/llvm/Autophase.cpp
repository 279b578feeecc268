//===- llvm/Autophase.cpp - Autophase features of a module ----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/Autophase.h"

#include "llvm/Analysis/CFG.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

namespace mlbridge::autophase {

namespace {

/// Accumulates the features of one module, block by block.
class Counter {
public:
  explicit Counter(FeatureVector &V) : V(V) {}

  void block(const llvm::BasicBlock &BB);

private:
  void add(Feature F, int64_t N = 1) { V[index(F)] += N; }
  void cfg(const llvm::BasicBlock &BB);
  void instruction(const llvm::Instruction &I);
  void operands(const llvm::Instruction &I);
  void opcode(const llvm::Instruction &I);

  FeatureVector &V;
};

void Counter::block(const llvm::BasicBlock &BB) {
  add(Feature::TotalBlocks);
  cfg(BB);
  int64_t Size = 0, Phis = 0, PhiArgs = 0;
  for (const llvm::Instruction &I : BB) {
    if (const auto *Phi = llvm::dyn_cast<llvm::PHINode>(&I)) {
      if (Size == 0)
        add(Feature::BeginPhi);
      ++Phis;
      PhiArgs += Phi->getNumIncomingValues();
    }
    instruction(I);
    ++Size;
  }
  add(Feature::ArgsPhi, PhiArgs);
  if (Phis == 0)
    add(Feature::BBNoPhi);
  else if (Phis <= 3)
    add(Feature::BB03Phi);
  else
    add(Feature::BBHiPhi);
  if (PhiArgs > 5)
    add(Feature::BBNumArgsHi);
  else if (PhiArgs >= 1)
    add(Feature::BBNumArgsLo);
  if (Size < 15)
    add(Feature::BlockLow);
  else if (Size <= 500)
    add(Feature::BlockMid);
}

void Counter::cfg(const llvm::BasicBlock &BB) {
  const llvm::Instruction *Term = BB.getTerminator();
  unsigned Succs = Term ? Term->getNumSuccessors() : 0;
  for (unsigned I = 0; I < Succs; ++I) {
    add(Feature::NumEdges);
    if (llvm::isCriticalEdge(Term, I))
      add(Feature::CriticalCount);
  }
  size_t Preds = llvm::pred_size(&BB);
  if (Succs == 1)
    add(Feature::oneSuccessor);
  else if (Succs == 2)
    add(Feature::twoSuccessor);
  if (Preds == 1)
    add(Feature::onePred);
  else if (Preds == 2)
    add(Feature::twoPred);
  else if (Preds > 2)
    add(Feature::morePreds);
  if (Preds == 1 && Succs == 1)
    add(Feature::onePredOneSuc);
  else if (Preds == 1 && Succs == 2)
    add(Feature::onePredTwoSuc);
  else if (Preds == 2 && Succs == 1)
    add(Feature::twoPredOneSuc);
  else if (Preds == 2 && Succs == 2)
    add(Feature::twoEach);
}

void Counter::instruction(const llvm::Instruction &I) {
  add(Feature::TotalInsts);
  operands(I);
  opcode(I);
  if (const auto *Br = llvm::dyn_cast<llvm::BranchInst>(&I)) {
    add(Feature::BranchCount);
    if (Br->isUnconditional())
      add(Feature::UncondBranches);
  }
  if (const auto *Call = llvm::dyn_cast<llvm::CallInst>(&I))
    if (const llvm::Function *Callee = Call->getCalledFunction())
      if (Callee->getReturnType()->isIntegerTy())
        add(Feature::returnInt);
  if (llvm::isa<llvm::UnaryInstruction>(I))
    add(Feature::testUnary);
  if (llvm::isa<llvm::BinaryOperator>(I) &&
      (llvm::isa<llvm::Constant>(I.getOperand(0)) ||
       llvm::isa<llvm::Constant>(I.getOperand(1))))
    add(Feature::binaryConstArg);
}

void Counter::operands(const llvm::Instruction &I) {
  for (const llvm::Value *Op : I.operand_values()) {
    const auto *C = llvm::dyn_cast<llvm::ConstantInt>(Op);
    if (!C)
      continue;
    const llvm::APInt &Value = C->getValue();
    if (Value.getBitWidth() == 32)
      add(Feature::const32Bit);
    else if (Value.getBitWidth() == 64)
      add(Feature::const64Bit);
    if (Value.isOne())
      add(Feature::numConstOnes);
    else if (Value.isZero())
      add(Feature::numConstZeroes);
  }
}

void Counter::opcode(const llvm::Instruction &I) {
  switch (I.getOpcode()) {
  case llvm::Instruction::AShr:
    return add(Feature::NumAShrInst);
  case llvm::Instruction::Add:
    return add(Feature::NumAddInst);
  case llvm::Instruction::Alloca:
    add(Feature::TotalMemInst);
    return add(Feature::NumAllocaInst);
  case llvm::Instruction::And:
    return add(Feature::NumAndInst);
  case llvm::Instruction::BitCast:
    return add(Feature::NumBitCastInst);
  case llvm::Instruction::Br:
    return add(Feature::NumBrInst);
  case llvm::Instruction::Call:
    add(Feature::TotalMemInst);
    return add(Feature::NumCallInst);
  case llvm::Instruction::GetElementPtr:
    add(Feature::TotalMemInst);
    return add(Feature::NumGetElementPtrInst);
  case llvm::Instruction::ICmp:
    return add(Feature::NumICmpInst);
  case llvm::Instruction::Invoke:
    return add(Feature::TotalMemInst);
  case llvm::Instruction::LShr:
    return add(Feature::NumLShrInst);
  case llvm::Instruction::Load:
    add(Feature::TotalMemInst);
    return add(Feature::NumLoadInst);
  case llvm::Instruction::Mul:
    return add(Feature::NumMulInst);
  case llvm::Instruction::Or:
    return add(Feature::NumOrInst);
  case llvm::Instruction::PHI:
    return add(Feature::NumPHIInst);
  case llvm::Instruction::Ret:
    return add(Feature::NumRetInst);
  case llvm::Instruction::SExt:
    return add(Feature::NumSExtInst);
  case llvm::Instruction::Select:
    return add(Feature::NumSelectInst);
  case llvm::Instruction::Shl:
    return add(Feature::NumShlInst);
  case llvm::Instruction::Store:
    add(Feature::TotalMemInst);
    return add(Feature::NumStoreInst);
  case llvm::Instruction::Sub:
    return add(Feature::NumSubInst);
  case llvm::Instruction::Trunc:
    return add(Feature::NumTruncInst);
  case llvm::Instruction::Xor:
    return add(Feature::NumXorInst);
  case llvm::Instruction::ZExt:
    return add(Feature::NumZExtInst);
  default:
    return;
  }
}

} // namespace

FeatureVector computeFeatures(const llvm::Module &M) {
  FeatureVector V{};
  Counter C(V);
  for (const llvm::Function &F : M) {
    V[index(Feature::TotalFuncs)] += 1;
    for (const llvm::BasicBlock &BB : F)
      C.block(BB);
  }
  return V;
}

int64_t instructionCount(const llvm::Module &M) {
  return static_cast<int64_t>(M.getInstructionCount());
}

} // namespace mlbridge::autophase

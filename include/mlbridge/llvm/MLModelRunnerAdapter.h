//===- mlbridge/llvm/MLModelRunnerAdapter.h - mlbridge in LLVM --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// MLModelRunnerAdapter: any mlbridge runner (pipes, gRPC, ONNX Runtime,
/// AOT-compiled models) where LLVM expects its own llvm::MLModelRunner, so
/// LLVM's MLGO advisors and other LLVM passes use mlbridge's transports and
/// in-process models. LLVM writes its features straight into the mlbridge
/// runner's buffers (matched by name; LLVM features the model does not know
/// still get buffers). LLVM's MLModelRunner has no error channel, so the
/// adapter adds one: evaluateChecked() returns the error, and
/// evaluateUntyped() (what LLVM calls) returns a caller-set fallback result
/// when the runner fails and remembers the error (lastError()).
/// Part of the optional mlbridge_llvm library (built against LLVM 16 or 19).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_LLVM_MLMODELRUNNERADAPTER_H
#define MLBRIDGE_LLVM_MLMODELRUNNERADAPTER_H

#include "mlbridge/ModelRunner.h"

#include "mlbridge/llvm/compat/MLModelRunner.h"

#include "llvm/Analysis/TensorSpec.h"

#include <memory>
#include <vector>

namespace mlbridge {

/// Converts an LLVM TensorSpec to mlbridge's (same names, types, shapes).
Expected<TensorSpec> fromLLVM(const llvm::TensorSpec &Spec);

/// An llvm::MLModelRunner over an mlbridge::ModelRunner.
class MLModelRunnerAdapter final : public compat::MLModelRunner {
public:
  /// Exposes \p Runner to LLVM with LLVM's input order \p Features: input I
  /// of the LLVM runner is the mlbridge input named Features[I].name(), or a
  /// scratch buffer when the mlbridge runner has no such input (then its
  /// shape and type are LLVM's). Mismatching types or sizes are errors.
  static Expected<std::unique_ptr<MLModelRunnerAdapter>>
  create(llvm::LLVMContext &Ctx, std::unique_ptr<ModelRunner> Runner,
         const std::vector<llvm::TensorSpec> &Features);

  /// Runs the model; the decision is output 0.
  Error evaluateChecked() { return Runner->evaluate(); }

  /// The wrapped runner.
  ModelRunner &runner() { return *Runner; }

  /// Sets the bytes evaluateUntyped() returns when the runner fails (at
  /// most 8 bytes, e.g. LLVM's default decision as int64_t).
  template <typename T> void setFallback(T Value) {
    static_assert(sizeof(T) <= sizeof(Fallback), "fallback too large");
    std::memcpy(Fallback, &Value, sizeof(T));
  }

  /// The error of the last failed evaluateUntyped(), or success.
  const Error &lastError() const { return LastError; }

  /// Forwards the context (e.g. the function being compiled) to the runner.
  void switchContext(llvm::StringRef Name) override;

  /// The kind every adapter reports to LLVM: a value of LLVM's
  /// MLModelRunner::Kind that LLVM does not define (its enum has a fixed
  /// underlying type, so the value is valid) and no other runner uses. LLVM's
  /// own classof functions (ModelUnderTrainingRunner: Development,
  /// ReleaseModeModelRunner: Release, ...) therefore never match an adapter,
  /// and classof below matches adapters only. The value spells "mlbr".
  static constexpr llvm::MLModelRunner::Kind AdapterKind =
      static_cast<llvm::MLModelRunner::Kind>(0x6d6c6272);

  /// LLVM's classof: true for adapters only (see AdapterKind).
  static bool classof(const llvm::MLModelRunner *R) {
    return R->getKind() == AdapterKind;
  }

private:
  MLModelRunnerAdapter(llvm::LLVMContext &Ctx, std::unique_ptr<ModelRunner> R,
                       size_t NumFeatures);
  void *evaluateUntyped() override;

  std::unique_ptr<ModelRunner> Runner;
  alignas(8) unsigned char Fallback[8] = {};
  Error LastError;
};

} // namespace mlbridge

#endif // MLBRIDGE_LLVM_MLMODELRUNNERADAPTER_H

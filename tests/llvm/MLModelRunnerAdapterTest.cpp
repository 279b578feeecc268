//===- MLModelRunnerAdapterTest.cpp - mlbridge runners as LLVM's ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// MLModelRunnerAdapter seen from LLVM's side, through llvm::MLModelRunner
// only: LLVM's feature order mapped onto the runner's inputs by name, scratch
// buffers for features the model does not know, type and size checks, the
// fallback result and the error channel when the runner fails, contexts,
// and LLVM-style RTTI (classof) that recognises adapters only.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/MLModelRunnerAdapter.h"

#include "TestHelpers.h"

#include "llvm/Analysis/NoInferenceModelRunner.h"
#include "llvm/IR/LLVMContext.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlbridge;

namespace {

/// An in-process model: decision = 10 * a + b over int64 inputs "a", "b";
/// fails with a model error while Fail is set; records its contexts.
class DecisionRunner final : public ModelRunner {
public:
  static std::unique_ptr<DecisionRunner> create() {
    std::unique_ptr<DecisionRunner> R(new DecisionRunner());
    Error E = R->initBuffers(
        {TensorSpec::of<int64_t>("a"), TensorSpec::of<int64_t>("b")},
        {TensorSpec::of<int64_t>("decision")});
    EXPECT_FALSE(E) << E.toString();
    return R;
  }
  bool Fail = false;
  std::vector<std::string> Contexts;

  Error switchContext(std::string_view Name) override {
    Contexts.emplace_back(Name);
    return Error::success();
  }

private:
  DecisionRunner() = default;
  Error evaluateImpl() override {
    if (Fail)
      return makeError(ErrorCode::ModelFailure, "the model failed");
    int64_t A = **input<int64_t>("a"), B = **input<int64_t>("b");
    *static_cast<int64_t *>(Outputs.data(0)) = 10 * A + B;
    return Error::success();
  }
};

/// LLVM's features in LLVM's order: not the runner's, and one more.
std::vector<llvm::TensorSpec> llvmFeatures() {
  return {llvm::TensorSpec::createSpec<int64_t>("b", {1}),
          llvm::TensorSpec::createSpec<float>("new_feature", {2, 3}),
          llvm::TensorSpec::createSpec<int64_t>("a", {1})};
}

struct Adapted {
  DecisionRunner *Runner;
  std::unique_ptr<MLModelRunnerAdapter> Adapter;
};

Adapted adapt(llvm::LLVMContext &Ctx) {
  auto Owned = DecisionRunner::create();
  DecisionRunner *Runner = Owned.get();
  auto A = MLModelRunnerAdapter::create(Ctx, std::move(Owned), llvmFeatures());
  EXPECT_TRUE(bool(A)) << A.error().toString();
  return {Runner, A ? std::move(*A) : nullptr};
}

} // namespace

TEST(MLModelRunnerAdapter, LLVMWritesIntoTheRunnersBuffersByName) {
  llvm::LLVMContext Ctx;
  Adapted T = adapt(Ctx);
  ASSERT_TRUE(T.Adapter);
  llvm::MLModelRunner &LLVMSide = *T.Adapter;
  EXPECT_EQ(LLVMSide.getTensor<int64_t>(0), *T.Runner->input<int64_t>("b"));
  EXPECT_EQ(LLVMSide.getTensor<int64_t>(2), *T.Runner->input<int64_t>("a"));
  // A feature the model does not know gets a zeroed scratch buffer.
  float *Scratch = LLVMSide.getTensor<float>(1);
  ASSERT_NE(Scratch, nullptr);
  EXPECT_EQ(Scratch[5], 0.0f);
  Scratch[5] = 1.5f;

  *LLVMSide.getTensor<int64_t>(2) = 4;
  *LLVMSide.getTensor<int64_t>(0) = 2;
  EXPECT_EQ(LLVMSide.evaluate<int64_t>(), 42);
  // Inputs survive evaluation (LLVM logs them afterwards).
  EXPECT_EQ(*LLVMSide.getTensor<int64_t>(2), 4);
  EXPECT_EQ(Scratch[5], 1.5f);
  *LLVMSide.getTensor<int64_t>(0) = 7;
  EXPECT_EQ(LLVMSide.evaluate<int64_t>(), 47);
  EXPECT_FALSE(T.Adapter->lastError());
  EXPECT_TRUE(llvm::isa<MLModelRunnerAdapter>(&LLVMSide));
}

TEST(MLModelRunnerAdapter, AFailingRunnerGivesTheFallbackAndTheError) {
  llvm::LLVMContext Ctx;
  Adapted T = adapt(Ctx);
  ASSERT_TRUE(T.Adapter);
  T.Adapter->setFallback<int64_t>(-3);
  T.Runner->Fail = true;
  llvm::MLModelRunner &LLVMSide = *T.Adapter;
  EXPECT_EQ(LLVMSide.evaluate<int64_t>(), -3);
  EXPECT_EQ(T.Adapter->lastError().code(), ErrorCode::ModelFailure);
  EXPECT_EQ(T.Adapter->lastError().message(), "the model failed");
  Error Checked = T.Adapter->evaluateChecked();
  EXPECT_EQ(Checked.code(), ErrorCode::ModelFailure);
  // The runner recovers: the next evaluation is the model's again.
  T.Runner->Fail = false;
  *LLVMSide.getTensor<int64_t>(2) = 1;
  EXPECT_EQ(LLVMSide.evaluate<int64_t>(), 10);
  ASSERT_OK(T.Adapter->evaluateChecked());
}

TEST(MLModelRunnerAdapter, ContextsReachTheRunner) {
  llvm::LLVMContext Ctx;
  Adapted T = adapt(Ctx);
  ASSERT_TRUE(T.Adapter);
  T.Adapter->switchContext("main");
  T.Adapter->switchContext("helper");
  EXPECT_EQ(T.Runner->Contexts, (std::vector<std::string>{"main", "helper"}));
}

TEST(MLModelRunnerAdapter, MismatchedFeaturesAreErrorsNamingThem) {
  llvm::LLVMContext Ctx;
  auto WrongType = MLModelRunnerAdapter::create(
      Ctx, DecisionRunner::create(),
      {llvm::TensorSpec::createSpec<float>("a", {1})});
  ASSERT_FALSE(bool(WrongType));
  EXPECT_EQ(WrongType.error().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(WrongType.error().message().find("'a'"), std::string::npos)
      << WrongType.error().message();

  auto WrongSize = MLModelRunnerAdapter::create(
      Ctx, DecisionRunner::create(),
      {llvm::TensorSpec::createSpec<int64_t>("b", {1, 33})});
  ASSERT_FALSE(bool(WrongSize));
  EXPECT_EQ(WrongSize.error().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(WrongSize.error().message().find("'b'"), std::string::npos);

  auto NoRunner = MLModelRunnerAdapter::create(Ctx, nullptr, llvmFeatures());
  ASSERT_FALSE(bool(NoRunner));
  EXPECT_EQ(NoRunner.error().code(), ErrorCode::InvalidArgument);
}

TEST(MLModelRunnerAdapter, LLVMTensorSpecsConvertForEveryType) {
  auto Check = [](const llvm::TensorSpec &L, DType Want) {
    auto M = fromLLVM(L);
    ASSERT_TRUE(bool(M)) << M.error().toString();
    EXPECT_EQ(M->name(), L.name());
    EXPECT_EQ(M->type(), Want) << L.name();
    EXPECT_EQ(M->shape(), L.shape()) << L.name();
    EXPECT_EQ(M->port(), L.port());
    EXPECT_EQ(M->elementCount(), L.getElementCount());
  };
  Check(llvm::TensorSpec::createSpec<float>("f", {2, 3}), DType::Float);
  Check(llvm::TensorSpec::createSpec<double>("d", {1}), DType::Double);
  Check(llvm::TensorSpec::createSpec<int8_t>("i8", {4}), DType::Int8);
  Check(llvm::TensorSpec::createSpec<uint8_t>("u8", {4}), DType::UInt8);
  Check(llvm::TensorSpec::createSpec<int16_t>("i16", {4}), DType::Int16);
  Check(llvm::TensorSpec::createSpec<uint16_t>("u16", {4}), DType::UInt16);
  Check(llvm::TensorSpec::createSpec<int32_t>("i32", {4}), DType::Int32);
  Check(llvm::TensorSpec::createSpec<uint32_t>("u32", {4}), DType::UInt32);
  Check(llvm::TensorSpec::createSpec<int64_t>("i64", {1, 33}, 2), DType::Int64);
  Check(llvm::TensorSpec::createSpec<uint64_t>("u64", {4}), DType::UInt64);
}

namespace {
/// Another Development-kind runner, as LLVM's ModelUnderTrainingRunner is;
/// its classof is ModelUnderTrainingRunner's.
class OtherDevelopmentRunner final : public llvm::MLModelRunner {
public:
  explicit OtherDevelopmentRunner(llvm::LLVMContext &Ctx)
      : llvm::MLModelRunner(Ctx, Kind::Development, 0) {}
  static bool classof(const llvm::MLModelRunner *R) {
    return R->getKind() == Kind::Development;
  }

private:
  void *evaluateUntyped() override { return &Result; }
  int64_t Result = 0;
};
} // namespace

TEST(MLModelRunnerAdapter, ClassofMatchesAdaptersOnly) {
  llvm::LLVMContext Ctx;
  Adapted T = adapt(Ctx);
  ASSERT_TRUE(T.Adapter);
  llvm::MLModelRunner *Adapter = T.Adapter.get();
  EXPECT_TRUE(llvm::isa<MLModelRunnerAdapter>(Adapter));
  EXPECT_EQ(llvm::dyn_cast<MLModelRunnerAdapter>(Adapter), T.Adapter.get());

  // Other runners of LLVM's kinds, Development included, are not adapters.
  OtherDevelopmentRunner Development(Ctx);
  llvm::NoInferenceModelRunner NoOp(
      Ctx, {llvm::TensorSpec::createSpec<int64_t>("a", {1})});
  for (llvm::MLModelRunner *Other :
       {static_cast<llvm::MLModelRunner *>(&Development),
        static_cast<llvm::MLModelRunner *>(&NoOp)}) {
    EXPECT_FALSE(llvm::isa<MLModelRunnerAdapter>(Other));
    EXPECT_EQ(llvm::dyn_cast<MLModelRunnerAdapter>(Other), nullptr);
  }

  // ...and LLVM's classof functions do not take an adapter for one of theirs
  // (a Development-kind adapter would pass for a ModelUnderTrainingRunner).
  EXPECT_FALSE(llvm::isa<OtherDevelopmentRunner>(Adapter));
  EXPECT_FALSE(llvm::isa<llvm::NoInferenceModelRunner>(Adapter));
  // LLVM's own kinds (InteractiveModelRunner's too, from LLVM 17) are not
  // the adapter's: LLVM's classof functions compare kinds.
  for (llvm::MLModelRunner::Kind K : compat::LLVMRunnerKinds)
    EXPECT_NE(Adapter->getKind(), K);
  EXPECT_EQ(Adapter->getKind(), MLModelRunnerAdapter::AdapterKind);
}

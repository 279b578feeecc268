//===- ModelRunnerTest.cpp - The MLModelRunner contract -------------------===//

#include "mlbridge/ModelRunner.h"
#include "mlbridge/PipeModelRunner.h"

#include "TestHelpers.h"

#include <cstdint>
#include <memory>
#include <string>

using namespace mlbridge;

namespace {
/// A real in-process model for the contract tests: sums the int64 inputs it
/// knows ("a", "b") into "sum"; ignores inputs it does not know.
class SumRunner final : public ModelRunner {
public:
  static std::unique_ptr<SumRunner> create(std::vector<TensorSpec> In) {
    std::unique_ptr<SumRunner> R(new SumRunner());
    Error E = R->initBuffers(std::move(In), {TensorSpec::of<int64_t>("sum"),
                                             TensorSpec::of<float>("v", {3})});
    EXPECT_FALSE(E) << E.toString();
    return R;
  }
  int Calls = 0;

private:
  Error evaluateImpl() override {
    ++Calls;
    int64_t Sum = 0;
    for (const char *Name : {"a", "b"})
      if (auto P = input<int64_t>(Name))
        Sum += **P;
    *static_cast<int64_t *>(Outputs.data(0)) = Sum;
    float *V = static_cast<float *>(Outputs.data(1));
    V[0] = 1, V[1] = 2, V[2] = 3;
    return Error::success();
  }
};
} // namespace

TEST(ModelRunner, BuffersByIndexAndNameAndInputsSurviveEvaluate) {
  auto R = SumRunner::create({TensorSpec::of<int64_t>("a"),
                              TensorSpec::of<int64_t>("b"),
                              TensorSpec::of<float>("new_feature", {4})});
  ASSERT_EQ(R->numInputs(), 3u);
  *R->input<int64_t>(0) = 40;
  auto B = R->input<int64_t>("b");
  ASSERT_TRUE(bool(B));
  **B = 2;
  // A feature the model does not know still has a zeroed buffer.
  float *New = R->input<float>(2);
  ASSERT_NE(New, nullptr);
  EXPECT_EQ(New[3], 0.0f);
  New[3] = 9.0f;
  auto Sum = R->evaluate<int64_t>();
  ASSERT_TRUE(bool(Sum)) << Sum.error().toString();
  EXPECT_EQ(*Sum, 42);
  // Inputs are not reset by evaluate().
  EXPECT_EQ(*R->input<int64_t>(0), 40);
  EXPECT_EQ(New[3], 9.0f);
  auto Again = R->evaluate<int64_t>();
  EXPECT_EQ(*Again, 42);
}

TEST(ModelRunner, TypedAccessIsChecked) {
  auto R = SumRunner::create({TensorSpec::of<int64_t>("a")});
  EXPECT_EQ(R->input<float>(0), nullptr);
  EXPECT_EQ(R->input<int64_t>(5), nullptr);
  auto Wrong = R->input<int32_t>("a");
  ASSERT_FALSE(bool(Wrong));
  EXPECT_EQ(Wrong.error().code(), ErrorCode::TypeMismatch);
  auto Missing = R->input<int64_t>("nope");
  EXPECT_EQ(Missing.error().code(), ErrorCode::InvalidArgument);

  auto AsFloat = R->evaluate<float>();
  ASSERT_FALSE(bool(AsFloat));
  EXPECT_EQ(AsFloat.error().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(AsFloat.error().message().find("'sum' is int64_t, not float"),
            std::string::npos);

  auto V = R->output<float>("v");
  ASSERT_TRUE(bool(V));
  EXPECT_EQ(V->Size, 3u);
  EXPECT_EQ((*V)[2], 3.0f);
  EXPECT_FALSE(bool(R->output<double>("v")));
  EXPECT_FALSE(bool(R->output<float>("w")));
  EXPECT_FALSE(bool(R->output<float>(7)));
}

TEST(ModelRunner, OutputIndexFindsOutputsByName) {
  auto R = SumRunner::create({TensorSpec::of<int64_t>("a")});
  auto Sum = R->outputIndex("sum");
  ASSERT_TRUE(bool(Sum)) << Sum.error().toString();
  EXPECT_EQ(*Sum, 0u);
  auto V = R->outputIndex("v");
  ASSERT_TRUE(bool(V)) << V.error().toString();
  EXPECT_EQ(*V, 1u);
  auto Missing = R->outputIndex("a"); // an input, not an output
  ASSERT_FALSE(bool(Missing));
  EXPECT_EQ(Missing.error().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(Missing.error().message(), "no output named 'a'");
}

namespace {
/// A runner whose creation reports what initBuffers() says about its specs.
class SpecCheckRunner final : public ModelRunner {
public:
  static Error create(std::vector<TensorSpec> In, std::vector<TensorSpec> Out) {
    SpecCheckRunner R;
    return R.initBuffers(std::move(In), std::move(Out));
  }

private:
  Error evaluateImpl() override { return Error::success(); }
};
} // namespace

TEST(ModelRunner, InvalidSpecsFromOfAreRefusedNamingTheTensor) {
  std::vector<TensorSpec> Out = {TensorSpec::of<int64_t>("decision")};
  Error Negative = SpecCheckRunner::create(
      {TensorSpec::of<int64_t>("a"), TensorSpec::of<float>("w", {2, -1})}, Out);
  EXPECT_EQ(Negative.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(Negative.message(),
            "inputs: tensor 'w': negative dimension -1 in shape [2,-1]");

  Error Rank = SpecCheckRunner::create(
      {}, {TensorSpec::of<float>("deep", std::vector<int64_t>(33, 1))});
  EXPECT_EQ(Rank.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(Rank.message(),
            "outputs: tensor 'deep': 33 dimensions, at most 32 are supported");

  Error Big = SpecCheckRunner::create(
      {TensorSpec::of<int8_t>("big", {1 << 30, 1 << 30, 4})}, Out);
  EXPECT_EQ(Big.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Big.message().find("tensor 'big': shape [1073741824,1073741824,4] "
                               "has more than 2^40 elements"),
            std::string::npos)
      << Big.message();

  // A real transport refuses it too, before making any channel.
  PipeOptions Opts;
  Opts.ChannelBase = "/nonexistent/dir/channel";
  auto Pipe =
      PipeModelRunner::create({TensorSpec::of<float>("w", {-3})}, Out, Opts);
  ASSERT_FALSE(bool(Pipe));
  EXPECT_EQ(Pipe.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Pipe.error().message().find("tensor 'w': negative dimension -3"),
            std::string::npos)
      << Pipe.error().message();

  ASSERT_OK(SpecCheckRunner::create(
      {TensorSpec::of<float>("empty", {0, 3}),
       TensorSpec::of<float>("rank32", std::vector<int64_t>(32, 1))},
      Out));
}

TEST(Expected, ASuccessErrorBecomesAnErrorNotAnEmptyExpected) {
  Expected<int> E = Error::success();
  EXPECT_FALSE(bool(E));
  EXPECT_TRUE(bool(E.error()));
  EXPECT_EQ(E.error().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(E.error().message(), "Expected constructed from a success Error");
  EXPECT_EQ(E.get(), nullptr);
  EXPECT_EQ(E.valueOr(7), 7);

  // The same through a function that forgets to check before returning.
  auto Forgetful = []() -> Expected<std::unique_ptr<int>> {
    Error NotAFailure;
    return NotAFailure;
  };
  auto P = Forgetful();
  ASSERT_FALSE(bool(P));
  EXPECT_EQ(P.takeError().code(), ErrorCode::InvalidArgument);

  // Real failures are kept as they are.
  Expected<int> F = makeError(ErrorCode::Timeout, "late");
  EXPECT_EQ(F.error().toString(), "timeout: late");
}

TEST(Expected, CheckedAccessorsNeverTouchAMissingValue) {
  Expected<std::string> V = std::string("value");
  ASSERT_NE(V.get(), nullptr);
  EXPECT_EQ(*V.get(), "value");
  EXPECT_EQ(V.valueOr("default"), "value");
  EXPECT_FALSE(bool(V.error()));
  const Expected<std::string> &CV = V;
  ASSERT_NE(CV.get(), nullptr);
  EXPECT_EQ(CV->size(), 5u);

  Expected<std::string> Failed =
      makeError(ErrorCode::ModelFailure, "the model failed");
  EXPECT_EQ(Failed.get(), nullptr);
  EXPECT_EQ(static_cast<const Expected<std::string> &>(Failed).get(), nullptr);
  EXPECT_EQ(Failed.valueOr("default"), "default");
  EXPECT_EQ(Failed.error().code(), ErrorCode::ModelFailure);

  // valueOr on an rvalue moves the value out (move-only types work).
  Expected<std::unique_ptr<int>> Owned = std::make_unique<int>(3);
  std::unique_ptr<int> Taken = std::move(Owned).valueOr(nullptr);
  ASSERT_NE(Taken, nullptr);
  EXPECT_EQ(*Taken, 3);
  Expected<std::unique_ptr<int>> NoOwned =
      makeError(ErrorCode::IO, "cannot allocate");
  EXPECT_EQ(std::move(NoOwned).valueOr(nullptr), nullptr);
}

namespace {
/// An over-aligned type that counts its live objects.
struct alignas(64) Aligned {
  static int Live;
  explicit Aligned(int V) : Value(V) { ++Live; }
  Aligned(const Aligned &O) : Value(O.Value) { ++Live; }
  ~Aligned() { --Live; }
  int Value;
};
int Aligned::Live = 0;
} // namespace

TEST(Expected, StorageIsAlignedAndValuesAreDestroyedOnce) {
  static_assert(alignof(Expected<Aligned>) >= 64, "storage alignment");
  {
    Expected<Aligned> A = Aligned(5);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(&*A) % 64, 0u);
    EXPECT_EQ(A->Value, 5);
    Expected<Aligned> Copy = A;
    EXPECT_EQ(Copy->Value, 5);
    Expected<Aligned> Moved = std::move(A);
    EXPECT_EQ(Moved->Value, 5);
    Expected<Aligned> Failed = makeError(ErrorCode::IO, "no");
    EXPECT_EQ(Aligned::Live, 3);
    // Assignment replaces a value by an error and an error by a value.
    Copy = Failed;
    EXPECT_FALSE(bool(Copy));
    EXPECT_EQ(Copy.error().message(), "no");
    EXPECT_EQ(Aligned::Live, 2);
    Failed = std::move(Moved);
    ASSERT_TRUE(bool(Failed));
    EXPECT_FALSE(bool(Failed.error()));
    EXPECT_EQ(Failed->Value, 5);
    Moved = Expected<Aligned>(Aligned(8));
    EXPECT_EQ(Moved->Value, 8);
    const Expected<Aligned> &Self = Moved;
    Moved = Self; // self-assignment keeps the value
    EXPECT_EQ(Moved->Value, 8);
    EXPECT_EQ(Aligned::Live, 3);
  }
  EXPECT_EQ(Aligned::Live, 0);
}

#if !defined(NDEBUG) && GTEST_HAS_DEATH_TEST
TEST(ExpectedDeathTest, DereferencingAnErrorFailsAnAssertionInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Expected<int> Failed = makeError(ErrorCode::IO, "no value");
  EXPECT_DEATH((void)*Failed, "dereferencing an Expected that holds an error");
  Expected<std::string> FailedString = makeError(ErrorCode::IO, "no value");
  EXPECT_DEATH((void)FailedString->size(),
               "dereferencing an Expected that holds an error");
}
#endif

TEST(Error, AFailureNeverHasTheSuccessCode) {
  Error E = makeError(ErrorCode::Success, "oops");
  ASSERT_TRUE(bool(E));
  EXPECT_EQ(E.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(E.message().find("ErrorCode::Success"), std::string::npos);
  EXPECT_NE(E.message().find("oops"), std::string::npos);
}

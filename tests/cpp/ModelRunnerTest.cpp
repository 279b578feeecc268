//===- ModelRunnerTest.cpp - The MLModelRunner contract -------------------===//

#include "mlbridge/ModelRunner.h"

#include "TestHelpers.h"

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

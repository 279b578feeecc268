//===- UserProtoRunnerTest.cpp - Runner over a user's own service ---------===//

#include "mlbridge/UserProtoRunner.h"
#include "user_proto/inliner_model.grpc.pb.h"

#include "TestHelpers.h"

using namespace mlbridge;
using namespace std::chrono_literals;

namespace {
using Runner = UserProtoRunner<example::InlinerModel::Stub,
                               example::InlineFeatures, example::InlineAdvice>;

Error createWith(std::vector<TensorSpec> In, std::vector<TensorSpec> Out) {
  auto R =
      Runner::create(grpc::CreateChannel("unix:/nonexistent/x.sock",
                                         grpc::InsecureChannelCredentials()),
                     &example::InlinerModel::Stub::Advise, std::move(In),
                     std::move(Out), 200ms);
  return R ? Error::success() : R.takeError();
}
} // namespace

TEST(UserProtoRunner, SpecsAreCheckedAgainstTheMessages) {
  std::vector<TensorSpec> Out = {TensorSpec::of<int64_t>("decision")};
  EXPECT_FALSE(createWith({TensorSpec::of<int64_t>("callee_size"),
                           TensorSpec::of<float>("weights", {4}),
                           TensorSpec::of<uint8_t>("is_hot")},
                          Out));
  Error Unknown = createWith({TensorSpec::of<int64_t>("calee_size")}, Out);
  EXPECT_EQ(Unknown.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Unknown.message().find("no field 'calee_size'"), std::string::npos);
  Error Type = createWith({TensorSpec::of<double>("callee_size")}, Out);
  EXPECT_EQ(Type.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(Type.message().find("example.InlineFeatures.callee_size"),
            std::string::npos);
  EXPECT_EQ(createWith({TensorSpec::of<float>("weights")}, Out).code(),
            ErrorCode::TypeMismatch); // scalar for a repeated field
  EXPECT_EQ(
      createWith({TensorSpec::of<int64_t>("call_sites", {2})}, Out).code(),
      ErrorCode::TypeMismatch); // vector for a singular field
  EXPECT_EQ(createWith({}, {TensorSpec::of<int64_t>("nope")}).code(),
            ErrorCode::InvalidArgument);
}

TEST(UserProtoRunner, UnreachableServiceIsAnError) {
  auto R =
      Runner::create(grpc::CreateChannel("unix:/nonexistent/x.sock",
                                         grpc::InsecureChannelCredentials()),
                     &example::InlinerModel::Stub::Advise,
                     {TensorSpec::of<int64_t>("callee_size")},
                     {TensorSpec::of<int64_t>("decision")}, 200ms);
  ASSERT_TRUE(bool(R));
  auto D = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(bool(D));
  EXPECT_TRUE(D.error().code() == ErrorCode::PeerClosed ||
              D.error().code() == ErrorCode::Timeout)
      << D.error().toString();
}

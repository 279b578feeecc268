//===- UserProtoRunnerTest.cpp - Runner over a user's own service ---------===//

#include "mlbridge/UserProtoRunner.h"
#include "user_proto/inliner_model.grpc.pb.h"

#include "TestHelpers.h"

#include <cstdlib>
#include <string>
#include <unistd.h>

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
  // Like the other runners, a failed call leaves the runner Broken: later
  // calls fail fast with the first error in the message.
  EXPECT_EQ((*R)->brokenBy().code(), ErrorCode::Broken);
  auto Again = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(bool(Again));
  EXPECT_EQ(Again.error().code(), ErrorCode::Broken);
  EXPECT_NE(Again.error().message().find("user service call failed"),
            std::string::npos)
      << Again.error().message();
  EXPECT_EQ((*R)->switchContext("f").code(), ErrorCode::Broken);
}

namespace {
/// The service: decision = callee_size * 2; a negative size is refused
/// with INVALID_ARGUMENT (an error of the service, not of the call).
class DoublingInliner final : public example::InlinerModel::Service {
  grpc::Status Advise(grpc::ServerContext *, const example::InlineFeatures *F,
                      example::InlineAdvice *A) override {
    if (F->callee_size() < 0)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "negative callee size");
    A->set_decision(F->callee_size() * 2);
    return grpc::Status::OK;
  }
};
} // namespace

TEST(UserProtoRunner, ServiceErrorsKeepTheRunnerCallFailuresBreakIt) {
  char Dir[] = "/tmp/mlbridge-userproto-test-XXXXXX";
  ASSERT_NE(::mkdtemp(Dir), nullptr);
  std::string Socket = std::string(Dir) + "/model.sock";
  DoublingInliner Model;
  grpc::ServerBuilder Builder;
  Builder.AddListeningPort("unix:" + Socket, grpc::InsecureServerCredentials());
  Builder.RegisterService(&Model);
  std::unique_ptr<grpc::Server> Server = Builder.BuildAndStart();
  ASSERT_NE(Server, nullptr);

  auto R = Runner::create(
      grpc::CreateChannel("unix:" + Socket, grpc::InsecureChannelCredentials()),
      &example::InlinerModel::Stub::Advise,
      {TensorSpec::of<int64_t>("callee_size")},
      {TensorSpec::of<int64_t>("decision")}, 5s);
  ASSERT_TRUE(bool(R)) << R.error().toString();
  *(*R)->input<int64_t>(0) = 21;
  auto D = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(D)) << D.error().toString();
  EXPECT_EQ(*D, 42);

  // The service refuses one request: a model failure, the runner goes on.
  *(*R)->input<int64_t>(0) = -1;
  auto Refused = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(bool(Refused));
  EXPECT_EQ(Refused.error().code(), ErrorCode::ModelFailure);
  EXPECT_NE(Refused.error().message().find("negative callee size"),
            std::string::npos)
      << Refused.error().message();
  EXPECT_FALSE((*R)->brokenBy());
  *(*R)->input<int64_t>(0) = 5;
  auto After = (*R)->evaluate<int64_t>();
  ASSERT_TRUE(bool(After)) << After.error().toString();
  EXPECT_EQ(*After, 10);

  // The service goes away: the call fails and the runner is Broken.
  Server->Shutdown();
  Server->Wait();
  Server.reset();
  ::unlink(Socket.c_str());
  auto Gone = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(bool(Gone));
  EXPECT_TRUE(Gone.error().code() == ErrorCode::PeerClosed ||
              Gone.error().code() == ErrorCode::Timeout)
      << Gone.error().toString();
  EXPECT_EQ((*R)->brokenBy().code(), ErrorCode::Broken);
  auto Later = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(bool(Later));
  EXPECT_EQ(Later.error().code(), ErrorCode::Broken);
  ::rmdir(Dir);
}

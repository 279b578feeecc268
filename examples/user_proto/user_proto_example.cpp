//===- user_proto_example.cpp - mlbridge over a user's own service --------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// A team already has `service InlinerModel` (inliner_model.proto). Their
// build generates its code with mlbridge_generate_grpc(); the compiler side
// then uses the ordinary runner API through UserProtoRunner. For a
// self-contained demo this program also serves the model itself, in-process
// on a private unix socket; normally the server is elsewhere.
//
//   mlbridge-example-user-proto      # exits 0 when every answer is right
//
//===----------------------------------------------------------------------===//

#include "mlbridge/UserProtoRunner.h"
#include "user_proto/inliner_model.grpc.pb.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace mlbridge;

namespace {
/// The model: inline small callees, or any callee on a hot path.
class ToyInliner final : public example::InlinerModel::Service {
  grpc::Status Advise(grpc::ServerContext *, const example::InlineFeatures *F,
                      example::InlineAdvice *A) override {
    float Bias = 0;
    for (float W : F->weights())
      Bias += W;
    bool Inline = F->is_hot() || F->callee_size() * F->call_sites() + Bias < 40;
    A->set_decision(Inline);
    A->set_confidence(0.75f);
    return grpc::Status::OK;
  }
};

bool expected(int64_t Size, int64_t Sites, bool Hot, float Bias) {
  return Hot || float(Size * Sites) + Bias < 40;
}
} // namespace

int main() {
  char Dir[] = "/tmp/mlbridge-userproto-XXXXXX";
  if (!::mkdtemp(Dir))
    return 1;
  std::string Address = std::string("unix:") + Dir + "/model.sock";
  ToyInliner Model;
  grpc::ServerBuilder Builder;
  Builder.AddListeningPort(Address, grpc::InsecureServerCredentials());
  Builder.RegisterService(&Model);
  std::unique_ptr<grpc::Server> Server = Builder.BuildAndStart();

  using Runner =
      UserProtoRunner<example::InlinerModel::Stub, example::InlineFeatures,
                      example::InlineAdvice>;
  auto R = Runner::create(
      grpc::CreateChannel(Address, grpc::InsecureChannelCredentials()),
      &example::InlinerModel::Stub::Advise,
      {TensorSpec::of<int64_t>("callee_size"),
       TensorSpec::of<int64_t>("call_sites"),
       TensorSpec::of<float>("weights", {3}),
       TensorSpec::of<uint8_t>("is_hot")},
      {TensorSpec::of<int64_t>("decision"),
       TensorSpec::of<float>("confidence")});
  if (!R) {
    std::fprintf(stderr, "%s\n", R.error().toString().c_str());
    return 1;
  }
  int Right = 0, Total = 0;
  for (int64_t Size = 1; Size <= 12; ++Size) {
    for (int64_t Sites = 1; Sites <= 5; ++Sites) {
      bool Hot = (Size + Sites) % 7 == 0;
      float *W = (*R)->input<float>(2);
      W[0] = 0.5f, W[1] = -1.0f, W[2] = float(Size % 3);
      *(*R)->input<int64_t>(0) = Size;
      *(*R)->input<int64_t>(1) = Sites;
      *(*R)->input<uint8_t>(3) = Hot;
      auto D = (*R)->evaluate<int64_t>();
      ++Total;
      if (!D) {
        std::fprintf(stderr, "%s\n", D.error().toString().c_str());
        continue;
      }
      Right += (*D != 0) == expected(Size, Sites, Hot, W[0] + W[1] + W[2]);
    }
  }
  auto Confidence = (*R)->output<float>("confidence");
  std::printf("user proto service: %d/%d decisions as expected, confidence "
              "%.2f\n",
              Right, Total, Confidence ? (*Confidence)[0] : -1.0f);
  R->reset();
  Server->Shutdown();
  ::unlink((std::string(Dir) + "/model.sock").c_str());
  ::rmdir(Dir);
  return Right == Total ? 0 : 1;
}

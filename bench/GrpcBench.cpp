//===- GrpcBench.cpp - gRPC runner round trip vs a raw gRPC call ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Cost of one decision through GrpcModelRunner to the Python model server
// (64 float32 features, one int64 reply), unary and streaming, next to a raw
// gRPC unary call carrying a request of the same size to a raw Python gRPC
// peer (generic handler, no protobuf parsing), measured in the same run, rep
// by rep, over unix sockets.
//
//   mlbridge-bench-grpc [--calls N] [--reps R]
//
//===----------------------------------------------------------------------===//

#include "mlbridge/GrpcModelRunner.h"
#include "mlbridge/v1/model_service.pb.h"

#include "BenchSupport.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <signal.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace mlbridge;
using bench::Child;
using bench::median;
using bench::timeCalls;
using Clock = std::chrono::steady_clock;

namespace {
constexpr int NumFeatures = 64;
const std::string Python = MLBRIDGE_BENCH_PYTHON;
const std::string BenchDir = std::string(MLBRIDGE_SOURCE_DIR) + "/bench/";

/// The baseline: a raw unary call of the same request size.
class RawCall {
public:
  RawCall(const std::string &Target, size_t RequestBytes)
      : Channel(
            grpc::CreateChannel(Target, grpc::InsecureChannelCredentials())),
        Stub(Channel), Payload(RequestBytes, 'x') {}
  bool ready() {
    return Channel->WaitForConnected(std::chrono::system_clock::now() +
                                     std::chrono::seconds(60));
  }
  bool call() {
    grpc::Slice S(Payload);
    grpc::ByteBuffer Request(&S, 1), Reply;
    grpc::ClientContext Ctx;
    Ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    auto Rpc = Stub.PrepareUnaryCall(&Ctx, "/mlbridge.bench.Raw/Echo", Request,
                                     &Queue);
    Rpc->StartCall();
    grpc::Status Status;
    Rpc->Finish(&Reply, &Status, this);
    void *Tag;
    bool Ok;
    return Queue.Next(&Tag, &Ok) && Ok && Status.ok() && Reply.Length() == 8;
  }
  ~RawCall() {
    Queue.Shutdown();
    void *Tag;
    bool Ok;
    while (Queue.Next(&Tag, &Ok)) {
    }
  }

private:
  std::shared_ptr<grpc::Channel> Channel;
  grpc::GenericStub Stub;
  grpc::CompletionQueue Queue;
  std::string Payload;
};

std::vector<TensorSpec> featureSpecs() {
  std::vector<TensorSpec> Specs;
  for (int I = 0; I < NumFeatures; ++I)
    Specs.push_back(TensorSpec::of<float>("f" + std::to_string(I)));
  return Specs;
}

/// Size of one serialised EvaluateRequest of this schema.
size_t requestBytes() {
  v1::EvaluateRequest R;
  R.set_session_id(1);
  R.set_observation(1000);
  for (int I = 0; I < NumFeatures; ++I)
    R.add_inputs(std::string(4, '\1'));
  return R.ByteSizeLong();
}

} // namespace

int main(int argc, char **argv) {
  bench::Options Opts{2000, 5, ""};
  if (!bench::parseOptions(argc, argv, Opts))
    return 2;
  const int Calls = Opts.Calls, Reps = Opts.Reps;
  char Template[] = "/tmp/mlbridge-bench-XXXXXX";
  std::string Dir = ::mkdtemp(Template);
  std::string RawTarget = "unix:" + Dir + "/raw.sock";
  std::string ModelTarget = "unix:" + Dir + "/model.sock";
  Child RawServer({Python, BenchDir + "raw_grpc_server.py", RawTarget, "8"});
  Child ModelServer({Python, "-m", "mlbridge", "serve", "--grpc", ModelTarget,
                     "--policy", BenchDir + "bench_policy.py:first_positive"});

  RawCall Raw(RawTarget, requestBytes());
  if (!Raw.ready()) {
    std::fprintf(stderr, "the raw gRPC peer did not start\n");
    return 1;
  }
  struct Contender {
    const char *Name;
    std::function<bool(int)> Call;
    std::vector<double> Micros, Ratio;
  };
  std::vector<std::unique_ptr<GrpcModelRunner>> Runners;
  std::vector<Contender> Contenders;
  Contenders.push_back(
      {"raw gRPC unary call", [&](int) { return Raw.call(); }, {}, {}});
  for (GrpcMode Mode : {GrpcMode::Unary, GrpcMode::Streaming}) {
    GrpcOptions O;
    O.Target = ModelTarget;
    O.Mode = Mode;
    O.ConnectTimeout = std::chrono::seconds(60);
    auto R = GrpcModelRunner::create(featureSpecs(),
                                     {TensorSpec::of<int64_t>("decision")}, O);
    if (!R) {
      std::fprintf(stderr, "%s\n", R.error().toString().c_str());
      return 1;
    }
    GrpcModelRunner *P = R->get();
    Runners.push_back(std::move(*R));
    Contenders.push_back(
        {Mode == GrpcMode::Unary ? "GrpcModelRunner, unary"
                                 : "GrpcModelRunner, streaming",
         [P](int I) {
           float *F0 = P->input<float>(0);
           *F0 = float(I % 3) - 1.0f;
           for (int K = 1; K < NumFeatures; ++K)
             *P->input<float>(size_t(K)) = float(I + K) * 0.25f;
           auto D = P->evaluate<int64_t>();
           if (!D)
             std::fprintf(stderr, "%s\n", D.error().toString().c_str());
           return D && *D == (*F0 > 0 ? 1 : 0);
         },
         {},
         {}});
  }
  for (Contender &C : Contenders)
    if (timeCalls(C.Call, 200) < 0) {
      std::fprintf(stderr, "%s failed during warm-up\n", C.Name);
      return 1;
    }
  for (int Rep = 0; Rep < Reps; ++Rep) {
    double RawUs = 0;
    for (size_t K = 0; K < Contenders.size(); ++K) {
      double Us = timeCalls(Contenders[K].Call, Calls);
      if (Us < 0)
        return 1;
      if (K == 0)
        RawUs = Us;
      Contenders[K].Micros.push_back(Us);
      Contenders[K].Ratio.push_back(Us / RawUs);
    }
  }
  std::string Interpreter = bench::interpreterVersion(Python);
  std::printf("mlbridge gRPC runner round trip: %d float32 features -> one "
              "int64, C++ client <-> Python server (%s), unix sockets\n",
              NumFeatures, Interpreter.c_str());
  std::printf("%d reps x %d calls; the raw call carries %zu request bytes "
              "(one EvaluateRequest) and 8 reply bytes\n\n",
              Reps, Calls, requestBytes());
  std::printf("%-30s %26s %28s\n", "", "us/call median [min..max]",
              "x raw unary, median [min..max]");
  bench::JsonReport Report("mlbridge-bench-grpc");
  Report.note("payload",
              std::to_string(NumFeatures) + " float32 scalar tensors");
  Report.note("python", Interpreter);
  Report.note("calls", Calls);
  Report.note("reps", Reps);
  Report.note("baseline", Contenders[0].Name);
  for (const Contender &C : Contenders) {
    auto M = std::minmax_element(C.Micros.begin(), C.Micros.end());
    auto R = std::minmax_element(C.Ratio.begin(), C.Ratio.end());
    std::printf("%-30s %8.1f [%6.1f..%6.1f] %10.2fx [%5.2f..%5.2f]\n", C.Name,
                median(C.Micros), *M.first, *M.second, median(C.Ratio),
                *R.first, *R.second);
    Report.add({C.Name, C.Micros, C.Ratio, -1});
  }
  if (!Opts.JsonPath.empty() && !Report.write(Opts.JsonPath))
    return 1;
  Runners.clear();
  ::unlink((Dir + "/raw.sock").c_str());
  ::unlink((Dir + "/model.sock").c_str());
  ::rmdir(Dir.c_str());
  return 0;
}

//===- grpc/GrpcModelRunner.cpp - Runner over gRPC ------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/GrpcModelRunner.h"

#include "grpc/Messages.h"
#include "mlbridge/v1/model_service.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

namespace mlbridge {

namespace {
namespace pb = ::mlbridge::v1;
using Clock = std::chrono::system_clock;

/// Maps a failed gRPC status to an mlbridge Error.
Error statusError(const grpc::Status &S, const char *What) {
  ErrorCode Code = ErrorCode::Protocol;
  switch (S.error_code()) {
  case grpc::StatusCode::DEADLINE_EXCEEDED:
    Code = ErrorCode::Timeout;
    break;
  case grpc::StatusCode::UNAVAILABLE:
  case grpc::StatusCode::CANCELLED:
    Code = ErrorCode::PeerClosed;
    break;
  case grpc::StatusCode::INVALID_ARGUMENT:
  case grpc::StatusCode::NOT_FOUND:
  case grpc::StatusCode::FAILED_PRECONDITION:
    Code = ErrorCode::InvalidArgument;
    break;
  case grpc::StatusCode::RESOURCE_EXHAUSTED:
    Code = ErrorCode::TooLarge;
    break;
  default:
    break;
  }
  return makeError(Code, What, ": gRPC status ",
                   std::to_string(int(S.error_code())), ": ",
                   S.error_message());
}

bool isTransportFailure(const Error &E) {
  return E.code() == ErrorCode::Timeout || E.code() == ErrorCode::PeerClosed ||
         E.code() == ErrorCode::Protocol;
}
} // namespace

struct GrpcModelRunner::Impl {
  // The context of the call in flight, for cancel() from other threads.
  std::mutex CallMutex;
  grpc::ClientContext *InFlight = nullptr;
  bool Cancelled = false;
  std::shared_ptr<grpc::Channel> Channel;
  std::unique_ptr<pb::ModelService::Stub> Stub;
  uint64_t SessionId = 0;
  bool Open = false;
  uint64_t Observation = 0;
  std::string PendingContext;
  bool ContextPending = false;
  // Reused messages: their strings keep their capacity across calls.
  pb::EvaluateRequest Request;
  pb::EvaluateReply Reply;
  pb::StreamRequest StreamMessage;
  // Streaming state.
  std::unique_ptr<grpc::ClientContext> StreamContext;
  grpc::CompletionQueue Queue;
  std::unique_ptr<
      grpc::ClientAsyncReaderWriter<pb::StreamRequest, pb::EvaluateReply>>
      Stream;

  /// Waits for the completion of the operation tagged \p Tag.
  Error await(void *Tag, Clock::time_point Deadline, const char *What) {
    void *Got = nullptr;
    bool Ok = false;
    switch (Queue.AsyncNext(&Got, &Ok, Deadline)) {
    case grpc::CompletionQueue::TIMEOUT:
      StreamContext->TryCancel();
      return makeError(ErrorCode::Timeout, "timed out ", What);
    case grpc::CompletionQueue::SHUTDOWN:
      return makeError(ErrorCode::PeerClosed, "stream shut down while ", What);
    case grpc::CompletionQueue::GOT_EVENT:
      break;
    }
    if (Got != Tag)
      return makeError(ErrorCode::Protocol, "unexpected completion while ",
                       What);
    if (!Ok)
      return streamFailure(What);
    return Error::success();
  }

  /// The stream's final status, as an error.
  Error streamFailure(const char *What) {
    grpc::Status S;
    void *Got = nullptr;
    bool Ok = false;
    Stream->Finish(&S, reinterpret_cast<void *>(4));
    if (Queue.AsyncNext(&Got, &Ok, Clock::now() + std::chrono::seconds(1)) ==
            grpc::CompletionQueue::GOT_EVENT &&
        !S.ok())
      return statusError(S, What);
    return makeError(ErrorCode::PeerClosed,
                     "the model server ended the stream "
                     "while ",
                     What);
  }

  ~Impl() {
    if (Stream) {
      StreamContext->TryCancel();
      Queue.Shutdown();
      void *Tag;
      bool Ok;
      while (Queue.Next(&Tag, &Ok)) {
      }
    }
  }
};

GrpcModelRunner::GrpcModelRunner(GrpcOptions Options)
    : Options(std::move(Options)), P(std::make_unique<Impl>()) {}

GrpcModelRunner::~GrpcModelRunner() {
  if (P && P->Open && Options.Mode == GrpcMode::Unary) {
    grpc::ClientContext Ctx;
    Ctx.set_deadline(Clock::now() + std::chrono::milliseconds(500));
    pb::CloseSessionRequest Req;
    Req.set_session_id(P->SessionId);
    pb::CloseSessionReply Rep;
    (void)P->Stub->CloseSession(&Ctx, Req, &Rep);
  }
  if (P && P->Stream && P->Open && !brokenBy()) {
    // Half-close so the server ends its handler, then let ~Impl cancel.
    P->Stream->WritesDone(reinterpret_cast<void *>(5));
    (void)P->await(reinterpret_cast<void *>(5),
                   Clock::now() + std::chrono::milliseconds(500),
                   "closing the stream");
  }
}

Expected<std::unique_ptr<GrpcModelRunner>>
GrpcModelRunner::create(std::vector<TensorSpec> Inputs,
                        std::vector<TensorSpec> Outputs, GrpcOptions Options) {
  if (Options.Target.empty())
    return makeError(ErrorCode::InvalidArgument, "gRPC target is empty");
  if (Outputs.empty())
    return makeError(ErrorCode::InvalidArgument, "a model needs an output");
  if (Options.MaxAttempts < 1)
    Options.MaxAttempts = 1;
  std::unique_ptr<GrpcModelRunner> R(new GrpcModelRunner(std::move(Options)));
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  grpc::ChannelArguments Args;
  Args.SetMaxReceiveMessageSize(int(std::min<size_t>(
      R->Options.MaxMessageBytes, size_t(std::numeric_limits<int>::max()))));
  Args.SetMaxSendMessageSize(int(std::min<size_t>(
      R->Options.MaxMessageBytes, size_t(std::numeric_limits<int>::max()))));
  std::shared_ptr<grpc::ChannelCredentials> Credentials =
      grpc::InsecureChannelCredentials();
  if (!R->Options.TlsRootCertificates.empty()) {
    grpc::SslCredentialsOptions Tls;
    Tls.pem_root_certs = R->Options.TlsRootCertificates;
    Tls.pem_cert_chain = R->Options.TlsClientCertificate;
    Tls.pem_private_key = R->Options.TlsClientKey;
    Credentials = grpc::SslCredentials(Tls);
  } else if (!R->Options.TlsClientCertificate.empty()) {
    return makeError(ErrorCode::InvalidArgument,
                     "a TLS client certificate needs TlsRootCertificates");
  }
  R->P->Channel =
      grpc::CreateCustomChannel(R->Options.Target, Credentials, Args);
  R->P->Stub = pb::ModelService::NewStub(R->P->Channel);
  return R;
}

Error GrpcModelRunner::fail(Error E) {
  markBroken(E);
  return E;
}

Error GrpcModelRunner::connect() {
  if (brokenBy())
    return brokenBy();
  if (P->Open)
    return Error::success();
  auto Deadline = Clock::now() + Options.ConnectTimeout;
  pb::OpenSessionRequest Open;
  grpcmsg::fillOpen(Inputs, Outputs, Open);
  if (Options.Mode == GrpcMode::Unary) {
    grpc::ClientContext Ctx;
    Ctx.set_deadline(Deadline);
    Ctx.set_wait_for_ready(true); // the server may still be starting
    pb::OpenSessionReply Reply;
    grpc::Status S = P->Stub->OpenSession(&Ctx, Open, &Reply);
    if (!S.ok())
      return fail(statusError(S, "opening the session"));
    if (Reply.version() != grpcmsg::ProtocolVersion)
      return fail(makeError(ErrorCode::Protocol,
                            "the model server speaks "
                            "protocol version ",
                            std::to_string(Reply.version())));
    P->SessionId = Reply.session_id();
    P->Request.set_session_id(P->SessionId);
    P->Open = true;
    return Error::success();
  }
  {
    std::lock_guard<std::mutex> Lock(P->CallMutex);
    if (P->Cancelled)
      return fail(makeError(ErrorCode::PeerClosed, "the call was cancelled"));
    P->StreamContext = std::make_unique<grpc::ClientContext>();
  }
  P->StreamContext->set_wait_for_ready(true);
  P->Stream =
      P->Stub->PrepareAsyncEvaluateStream(P->StreamContext.get(), &P->Queue);
  P->Stream->StartCall(reinterpret_cast<void *>(1));
  if (Error E = P->await(reinterpret_cast<void *>(1), Deadline,
                         "starting the stream"))
    return fail(E);
  *P->StreamMessage.mutable_open() = Open;
  P->Stream->Write(P->StreamMessage, reinterpret_cast<void *>(2));
  if (Error E =
          P->await(reinterpret_cast<void *>(2), Deadline, "sending the schema"))
    return fail(E);
  P->Open = true;
  return Error::success();
}

void GrpcModelRunner::cancel() {
  std::lock_guard<std::mutex> Lock(P->CallMutex);
  P->Cancelled = true;
  if (P->InFlight)
    P->InFlight->TryCancel();
  if (P->StreamContext)
    P->StreamContext->TryCancel();
}

Error GrpcModelRunner::switchContext(std::string_view Name) {
  if (brokenBy())
    return brokenBy();
  P->PendingContext.assign(Name.data(), Name.size());
  P->ContextPending = true;
  P->Observation = 0;
  return Error::success();
}

Error GrpcModelRunner::evaluateImpl() {
  if (Error E = connect())
    return E;
  auto Deadline = Clock::now() + Options.CallTimeout;
  pb::EvaluateRequest &Req = Options.Mode == GrpcMode::Unary
                                 ? P->Request
                                 : *P->StreamMessage.mutable_evaluate();
  grpcmsg::fillRequest(Inputs, P->Observation++,
                       P->ContextPending ? &P->PendingContext : nullptr, Req);
  P->ContextPending = false;

  pb::EvaluateReply &Reply = P->Reply;
  if (Options.Mode == GrpcMode::Unary) {
    grpc::Status S;
    auto Backoff = std::chrono::milliseconds(10);
    for (int Attempt = 1;; ++Attempt) {
      grpc::ClientContext Ctx;
      Ctx.set_deadline(Deadline);
      {
        std::lock_guard<std::mutex> Lock(P->CallMutex);
        if (P->Cancelled)
          return fail(
              makeError(ErrorCode::PeerClosed, "the call was cancelled"));
        P->InFlight = &Ctx;
      }
      S = P->Stub->Evaluate(&Ctx, Req, &Reply);
      {
        std::lock_guard<std::mutex> Lock(P->CallMutex);
        P->InFlight = nullptr;
      }
      if (S.ok() || S.error_code() != grpc::StatusCode::UNAVAILABLE ||
          Attempt >= Options.MaxAttempts || Clock::now() + Backoff >= Deadline)
        break;
      std::this_thread::sleep_for(Backoff); // bounded: within the deadline
      Backoff *= 2;
    }
    if (!S.ok()) {
      Error E = statusError(S, "evaluating");
      return isTransportFailure(E) ? fail(E) : E;
    }
  } else {
    P->Stream->Write(P->StreamMessage, reinterpret_cast<void *>(2));
    if (Error E = P->await(reinterpret_cast<void *>(2), Deadline,
                           "sending a request"))
      return fail(E);
    P->Stream->Read(&Reply, reinterpret_cast<void *>(3));
    if (Error E = P->await(reinterpret_cast<void *>(3), Deadline,
                           "waiting for a reply"))
      return fail(E);
  }
  if (Error E = grpcmsg::copyReply(Reply, Outputs))
    return E;
  ++Evaluations;
  return Error::success();
}

} // namespace mlbridge

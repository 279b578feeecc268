//===- grpc/GrpcServerModelRunner.cpp - Compiler as server ----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The driver's stream is served by one gRPC handler thread that does every
// read and write on it; evaluate() hands it an observation and waits, with a
// deadline, for the decision. A stalled driver therefore never blocks the
// compiler past its deadline: the runner cancels the stream and fails fast.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/GrpcServerModelRunner.h"

#include "grpc/Messages.h"
#include "mlbridge/v1/model_service.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <arpa/inet.h>
#include <condition_variable>
#include <mutex>
#include <sys/stat.h>

namespace mlbridge {

namespace {
namespace pb = ::mlbridge::v1;
using Clock = std::chrono::steady_clock;

bool isLoopbackHost(std::string Host) {
  if (Host.size() > 1 && Host.front() == '[' && Host.back() == ']')
    Host = Host.substr(1, Host.size() - 2);
  if (Host == "localhost")
    return true;
  in_addr V4;
  if (inet_pton(AF_INET, Host.c_str(), &V4) == 1)
    return (ntohl(V4.s_addr) >> 24) == 127;
  in6_addr V6;
  return inet_pton(AF_INET6, Host.c_str(), &V6) == 1 &&
         IN6_IS_ADDR_LOOPBACK(&V6);
}
} // namespace

Error checkListenAddress(const std::string &Address, bool AllowRemote) {
  if (Address.rfind("unix:", 0) == 0) {
    if (Address.size() == 5)
      return makeError(ErrorCode::InvalidArgument,
                       "unix address needs a path: unix:/path/to/socket");
    return Error::success();
  }
  size_t Colon = Address.rfind(':');
  if (Colon == std::string::npos || Colon + 1 == Address.size() ||
      Address.find_first_not_of("0123456789", Colon + 1) != std::string::npos)
    return makeError(ErrorCode::InvalidArgument, "address '", Address,
                     "' is neither unix:PATH nor HOST:PORT");
  if (!AllowRemote && !isLoopbackHost(Address.substr(0, Colon)))
    return makeError(ErrorCode::InvalidArgument, "refusing to listen on '",
                     Address,
                     "': not a loopback address (set AllowRemote to serve "
                     "other machines)");
  return Error::success();
}

struct GrpcServerModelRunner::Impl final : public pb::CompilerService::Service {
  std::mutex M;
  std::condition_variable CV;
  // Session state, guarded by M.
  bool Attached = false; // a driver took the session
  bool Ready = false;    // it said hello and got the schema
  bool Ending = false;   // the runner is shutting down
  Error StreamError;     // why the stream ended, if it did
  bool HasObservation = false;
  bool HasDecision = false;
  bool InStreamIO = false; // the handler is blocked on the driver
  grpc::ServerContext *Context = nullptr;
  pb::CompilerMessage Open;        // the schema, sent first
  pb::CompilerMessage Observation; // the pending observation
  pb::EvaluateReply Decision;      // the last decision
  std::unique_ptr<grpc::Server> Server;

  void endStream(Error E) {
    std::lock_guard<std::mutex> Lock(M);
    if (!StreamError)
      StreamError = std::move(E);
    CV.notify_all();
  }

  grpc::Status
  Drive(grpc::ServerContext *Ctx,
        grpc::ServerReaderWriter<pb::CompilerMessage, pb::DriverMessage>
            *Stream) override {
    {
      std::lock_guard<std::mutex> Lock(M);
      if (Attached || Ending)
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "this compiler already has a driver");
      Attached = true;
      Context = Ctx;
    }
    pb::DriverMessage In;
    if (!Stream->Read(&In) || In.kind_case() != pb::DriverMessage::kHello ||
        In.hello() != grpcmsg::ProtocolVersion) {
      endStream(makeError(ErrorCode::Protocol,
                          "the driver did not open with hello(1)"));
      return finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "the first message must be hello(1)"));
    }
    if (!Stream->Write(Open)) {
      endStream(makeError(ErrorCode::PeerClosed,
                          "the driver went away before the schema"));
      return finish(grpc::Status::OK);
    }
    {
      std::lock_guard<std::mutex> Lock(M);
      Ready = true;
      CV.notify_all();
    }
    while (true) {
      std::unique_lock<std::mutex> Lock(M);
      CV.wait(Lock, [&] { return HasObservation || Ending; });
      if (Ending)
        break;
      HasObservation = false;
      InStreamIO = true;
      Lock.unlock();
      // Only this thread touches Observation while HasObservation is false
      // and the runner waits for the decision.
      if (!Stream->Write(Observation)) {
        endStream(makeError(ErrorCode::PeerClosed,
                            "the driver went away (write failed)"));
        break;
      }
      if (!Stream->Read(&In)) {
        endStream(makeError(ErrorCode::PeerClosed,
                            "the driver went away before deciding"));
        break;
      }
      if (In.kind_case() != pb::DriverMessage::kDecision) {
        endStream(makeError(ErrorCode::Protocol,
                            "the driver sent something other than a "
                            "decision"));
        break;
      }
      Lock.lock();
      InStreamIO = false;
      Decision.Swap(In.mutable_decision());
      HasDecision = true;
      CV.notify_all();
    }
    return finish(grpc::Status::OK);
  }

  grpc::Status finish(grpc::Status S) {
    std::lock_guard<std::mutex> Lock(M);
    Context = nullptr;
    InStreamIO = false;
    return S;
  }

  /// Ends the driver's stream (cleanly when it is between decisions,
  /// cancelled when it owes one) and stops the server.
  void stop() {
    {
      std::lock_guard<std::mutex> Lock(M);
      Ending = true;
      if (Context && InStreamIO)
        Context->TryCancel();
      CV.notify_all();
    }
    if (Server) {
      Server->Shutdown(std::chrono::system_clock::now() +
                       std::chrono::seconds(1));
      Server->Wait();
      Server.reset();
    }
  }
};

GrpcServerModelRunner::GrpcServerModelRunner(GrpcServerOptions Options)
    : Options(std::move(Options)), P(std::make_unique<Impl>()) {}

GrpcServerModelRunner::~GrpcServerModelRunner() { shutdown(); }

void GrpcServerModelRunner::shutdown() {
  if (!P)
    return;
  P->stop();
  markBroken(makeError(ErrorCode::PeerClosed, "the runner was shut down"));
}

Expected<std::unique_ptr<GrpcServerModelRunner>>
GrpcServerModelRunner::create(std::vector<TensorSpec> Inputs,
                              std::vector<TensorSpec> Outputs,
                              GrpcServerOptions Options) {
  if (Error E = checkListenAddress(Options.Address, Options.AllowRemote))
    return E;
  if (Outputs.empty())
    return makeError(ErrorCode::InvalidArgument, "a model needs an output");
  std::unique_ptr<GrpcServerModelRunner> R(
      new GrpcServerModelRunner(std::move(Options)));
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  grpcmsg::fillOpen(R->Inputs, R->Outputs, *R->P->Open.mutable_open());
  int Limit = int(std::min<size_t>(R->Options.MaxMessageBytes, 0x7fffffff));
  grpc::ServerBuilder Builder;
  int Port = 0;
  std::shared_ptr<grpc::ServerCredentials> Credentials =
      grpc::InsecureServerCredentials();
  if (!R->Options.TlsCertificate.empty() || !R->Options.TlsKey.empty()) {
    if (R->Options.TlsCertificate.empty() || R->Options.TlsKey.empty())
      return makeError(ErrorCode::InvalidArgument,
                       "TLS needs both a certificate and its key");
    grpc::SslServerCredentialsOptions Tls(
        R->Options.TlsClientCA.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    Tls.pem_root_certs = R->Options.TlsClientCA;
    Tls.pem_key_cert_pairs.push_back(
        {R->Options.TlsKey, R->Options.TlsCertificate});
    Credentials = grpc::SslServerCredentials(Tls);
  }
  Builder.AddListeningPort(R->Options.Address, Credentials, &Port);
  Builder.SetMaxReceiveMessageSize(Limit);
  Builder.SetMaxSendMessageSize(Limit);
  Builder.RegisterService(R->P.get());
  R->P->Server = Builder.BuildAndStart();
  const std::string &Address = R->Options.Address;
  if (!R->P->Server || (Address.rfind("unix:", 0) != 0 && Port == 0))
    return makeError(ErrorCode::IO, "cannot listen on '", Address, "'");
  if (Address.rfind("unix:", 0) == 0) {
    R->BoundAddress = Address;
    // Private socket (gRPC creates it with the process umask).
    if (::chmod(Address.substr(5).c_str(), 0600) != 0)
      return makeError(ErrorCode::IO, "cannot make '", Address.substr(5),
                       "' private");
  } else {
    R->BoundAddress =
        Address.substr(0, Address.rfind(':') + 1) + std::to_string(Port);
  }
  return R;
}

Error GrpcServerModelRunner::switchContext(std::string_view Name) {
  if (brokenBy())
    return brokenBy();
  std::lock_guard<std::mutex> Lock(P->M);
  PendingContext.assign(Name.data(), Name.size());
  ContextPending = true;
  NextObservation = 0;
  return Error::success();
}

Error GrpcServerModelRunner::evaluateImpl() {
  std::unique_lock<std::mutex> Lock(P->M);
  if (!P->Ready) {
    bool Up = P->CV.wait_for(Lock, Options.ConnectTimeout, [&] {
      return P->Ready || bool(P->StreamError) || P->Ending;
    });
    if (!Up || !P->Ready) {
      Error E = P->StreamError
                    ? P->StreamError
                    : makeError(ErrorCode::Timeout, "no driver connected to '",
                                BoundAddress, "' in time");
      Lock.unlock();
      markBroken(E);
      return E;
    }
  }
  if (P->StreamError) {
    Error E = P->StreamError;
    Lock.unlock();
    markBroken(E);
    return E;
  }
  grpcmsg::fillRequest(Inputs, NextObservation++,
                       ContextPending ? &PendingContext : nullptr,
                       *P->Observation.mutable_observation());
  ContextPending = false;
  P->HasDecision = false;
  P->HasObservation = true;
  P->CV.notify_all();
  bool Got = P->CV.wait_for(Lock, Options.CallTimeout, [&] {
    return P->HasDecision || bool(P->StreamError) || P->Ending;
  });
  if (!Got || !P->HasDecision) {
    Error E = P->StreamError ? P->StreamError
                             : makeError(ErrorCode::Timeout,
                                         "the driver did not decide in time");
    if (P->Context)
      P->Context->TryCancel();
    Lock.unlock();
    markBroken(E);
    return E;
  }
  P->HasDecision = false;
  return grpcmsg::copyReply(P->Decision, Outputs);
}

} // namespace mlbridge

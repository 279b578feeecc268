//===- mlbridge/GrpcModelRunner.h - Runner over gRPC ------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// GrpcModelRunner: the compiler as a client of a model server speaking
/// mlbridge.v1.ModelService (proto/mlbridge/v1/model_service.proto), e.g.
/// `mlbridge serve --grpc ADDRESS`. Same runner API as PipeModelRunner: the
/// schema goes once per session, then only tensor bytes.
///
/// Every call has a deadline; unary calls that fail with UNAVAILABLE are
/// retried a bounded number of times within their deadline. A dead or
/// missing server is an error within the deadline, after which the runner
/// fails fast (ErrorCode::Broken) and the compiler uses its default.
///
/// Part of the optional `mlbridge_grpc` library (CMake MLBRIDGE_ENABLE_GRPC);
/// this header does not include gRPC headers.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_GRPCMODELRUNNER_H
#define MLBRIDGE_GRPCMODELRUNNER_H

#include "mlbridge/Codec.h"
#include "mlbridge/ModelRunner.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

class RunnerFactories;

/// How decisions travel.
enum class GrpcMode {
  /// One Evaluate call per decision.
  Unary,
  /// One bidirectional stream per session (lower per-call cost).
  Streaming,
};

/// Configuration of a GrpcModelRunner.
struct GrpcOptions {
  /// Server address: "unix:/path/to/socket" or "host:port".
  std::string Target;
  /// Unary calls or one stream.
  GrpcMode Mode = GrpcMode::Unary;
  /// Longest wait for the server to accept the session (it may still be
  /// starting: calls wait for the channel to become ready until then).
  std::chrono::milliseconds ConnectTimeout{10000};
  /// Deadline of each evaluate() (all its attempts together).
  std::chrono::milliseconds CallTimeout{10000};
  /// Attempts of a unary call that fails with UNAVAILABLE (at least 1).
  int MaxAttempts = 3;
  /// Largest message sent or received.
  size_t MaxMessageBytes = DefaultMaxMessageBytes;
  /// TLS: PEM of the CA that signed the server's certificate. Empty means a
  /// plaintext channel (fine for unix sockets and loopback).
  std::string TlsRootCertificates;
  /// TLS client certificate and its key (PEM), for servers that require one.
  std::string TlsClientCertificate;
  /// Key of TlsClientCertificate (PEM).
  std::string TlsClientKey;
};

/// A ModelRunner whose model is served over gRPC.
class GrpcModelRunner final : public ModelRunner {
public:
  /// Makes a runner for \p Inputs and \p Outputs. Does not block: the
  /// session is opened by connect() or the first evaluate().
  static Expected<std::unique_ptr<GrpcModelRunner>>
  create(std::vector<TensorSpec> Inputs, std::vector<TensorSpec> Outputs,
         GrpcOptions Options);

  /// Closes the session (best effort, bounded by a short deadline).
  ~GrpcModelRunner() override;

  /// Opens the session (sends the schema). Called implicitly.
  Error connect();

  /// The next request carries \p Name as its context; observation numbers
  /// restart at 0.
  Error switchContext(std::string_view Name) override;

  /// Number of successful evaluations so far.
  uint64_t evaluations() const { return Evaluations; }

  /// Cancels the call in flight, if any; safe from any thread (e.g. a
  /// compiler's watchdog). The interrupted evaluate() fails and the runner
  /// is Broken from then on.
  void cancel();

  /// Implementation state (gRPC objects); opaque to users.
  struct Impl;

private:
  GrpcModelRunner(GrpcOptions Options);
  Error evaluateImpl() override;
  Error fail(Error E);

  GrpcOptions Options;
  std::unique_ptr<Impl> P;
  uint64_t Evaluations = 0;
};

/// Adds the grpc (GrpcModelRunner) runner kind to \p Factories, for
/// createRunner() (mlbridge/RunnerConfig.h).
void addGrpcRunners(RunnerFactories &Factories);

} // namespace mlbridge

#endif // MLBRIDGE_GRPCMODELRUNNER_H

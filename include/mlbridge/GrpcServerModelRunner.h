//===- mlbridge/GrpcServerModelRunner.h - Compiler as server ----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// GrpcServerModelRunner: the compiler serves mlbridge.v1.CompilerService and
/// a driver (e.g. a Python training loop, `mlbridge drive --grpc ADDRESS`)
/// connects and makes its decisions, CompilerGym-style. Same runner API as
/// every other runner.
///
/// Nothing blocks in the factory: the server starts listening and returns.
/// evaluate() waits at most ConnectTimeout for a driver to attach (first
/// call only) and CallTimeout for each decision; the runner shuts the server
/// down cleanly when destroyed or on shutdown(). No stdin tokens, no
/// blocking constructor.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_GRPCSERVERMODELRUNNER_H
#define MLBRIDGE_GRPCSERVERMODELRUNNER_H

#include "mlbridge/Codec.h"
#include "mlbridge/ModelRunner.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

/// Configuration of a GrpcServerModelRunner.
struct GrpcServerOptions {
  /// Where to listen: "unix:/path/to/socket" (created mode 0600) or
  /// "host:port" (loopback only unless AllowRemote).
  std::string Address;
  /// Allows binding a non-loopback TCP address.
  bool AllowRemote = false;
  /// Longest wait for a driver to connect (first evaluate only).
  std::chrono::milliseconds ConnectTimeout{30000};
  /// Longest wait for each decision.
  std::chrono::milliseconds CallTimeout{30000};
  /// Largest message sent or received.
  size_t MaxMessageBytes = DefaultMaxMessageBytes;
  /// TLS: the server's certificate chain and key (PEM). Empty: plaintext.
  std::string TlsCertificate;
  /// Key of TlsCertificate (PEM).
  std::string TlsKey;
  /// When set, drivers must present a certificate signed by this CA (PEM).
  std::string TlsClientCA;
};

/// A ModelRunner whose decisions come from a driver connected to the
/// compiler's own gRPC server.
class GrpcServerModelRunner final : public ModelRunner {
public:
  /// Starts listening at Options.Address; returns once the server is up.
  static Expected<std::unique_ptr<GrpcServerModelRunner>>
  create(std::vector<TensorSpec> Inputs, std::vector<TensorSpec> Outputs,
         GrpcServerOptions Options);

  /// Shuts the server down (ends the driver's stream).
  ~GrpcServerModelRunner() override;

  /// The address actually bound (TCP port 0 is replaced by the real port).
  const std::string &address() const { return BoundAddress; }

  /// Ends the session and stops the server; later calls fail with Broken.
  void shutdown();

  /// The next observation carries \p Name as its context.
  Error switchContext(std::string_view Name) override;

  /// Implementation state (gRPC objects); opaque to users.
  struct Impl;

private:
  GrpcServerModelRunner(GrpcServerOptions Options);
  Error evaluateImpl() override;

  GrpcServerOptions Options;
  std::string BoundAddress;
  std::unique_ptr<Impl> P;
  std::string PendingContext;
  bool ContextPending = false;
  uint64_t NextObservation = 0;
};

/// Checks a listening address: unix:PATH, or HOST:PORT on loopback unless
/// \p AllowRemote.
Error checkListenAddress(const std::string &Address, bool AllowRemote);

} // namespace mlbridge

#endif // MLBRIDGE_GRPCSERVERMODELRUNNER_H

//===- grpc/Messages.h - Runner buffers <-> service messages ----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal: shared by the gRPC client and server runners: schemas from
/// buffers, requests filled from inputs (reusing the message's strings), and
/// replies checked and copied into outputs.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_GRPC_MESSAGES_H
#define MLBRIDGE_GRPC_MESSAGES_H

#include "mlbridge/Error.h"
#include "mlbridge/TensorBuffers.h"

#include "mlbridge/v1/model_service.pb.h"

namespace mlbridge {
namespace grpcmsg {

/// Protocol version of mlbridge.v1.
inline constexpr uint32_t ProtocolVersion = 1;

/// An OpenSessionRequest carrying the schema of \p Inputs and \p Outputs.
void fillOpen(const TensorBuffers &Inputs, const TensorBuffers &Outputs,
              v1::OpenSessionRequest &Open);

/// Writes the input bytes into \p Request (its strings keep their capacity).
void fillRequest(const TensorBuffers &Inputs, uint64_t Observation,
                 const std::string *Context, v1::EvaluateRequest &Request);

/// Checks \p Reply against \p Outputs and copies it in; a policy error in the
/// reply is ModelFailure.
Error copyReply(const v1::EvaluateReply &Reply, TensorBuffers &Outputs);

} // namespace grpcmsg
} // namespace mlbridge

#endif // MLBRIDGE_GRPC_MESSAGES_H

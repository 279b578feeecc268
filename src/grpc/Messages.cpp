//===- grpc/Messages.cpp - Runner buffers <-> service messages ------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "grpc/Messages.h"

#include <cstring>

namespace mlbridge {
namespace grpcmsg {

namespace {
void fillSpecs(const TensorBuffers &B,
               google::protobuf::RepeatedPtrField<v1::TensorSpec> *Out) {
  for (size_t I = 0; I < B.size(); ++I) {
    const TensorSpec &S = B.spec(I);
    v1::TensorSpec *M = Out->Add();
    M->set_name(S.name());
    M->set_dtype(v1::DType(int(S.type()) + 1));
    for (int64_t D : S.shape())
      M->add_shape(D);
    M->set_port(S.port());
  }
}
} // namespace

void fillOpen(const TensorBuffers &Inputs, const TensorBuffers &Outputs,
              v1::OpenSessionRequest &Open) {
  Open.set_version(ProtocolVersion);
  fillSpecs(Inputs, Open.mutable_schema()->mutable_inputs());
  fillSpecs(Outputs, Open.mutable_schema()->mutable_outputs());
}

void fillRequest(const TensorBuffers &Inputs, uint64_t Observation,
                 const std::string *Context, v1::EvaluateRequest &Request) {
  while (Request.inputs_size() < int(Inputs.size()))
    Request.add_inputs();
  Request.set_observation(Observation);
  if (Context)
    Request.set_context(*Context);
  else
    Request.clear_context();
  for (size_t I = 0; I < Inputs.size(); ++I)
    Request.mutable_inputs(int(I))->assign(
        static_cast<const char *>(Inputs.data(I)), Inputs.spec(I).byteSize());
}

Error copyReply(const v1::EvaluateReply &Reply, TensorBuffers &Outputs) {
  if (!Reply.error().empty())
    return makeError(ErrorCode::ModelFailure,
                     "model side reported: ", Reply.error().substr(0, 4096));
  if (Reply.outputs_size() != int(Outputs.size()))
    return makeError(ErrorCode::Protocol, "reply carries ",
                     std::to_string(Reply.outputs_size()),
                     " outputs, expected ", std::to_string(Outputs.size()));
  for (size_t I = 0; I < Outputs.size(); ++I) {
    const std::string &Data = Reply.outputs(int(I));
    if (Data.size() != Outputs.spec(I).byteSize())
      return makeError(ErrorCode::TypeMismatch, "output '",
                       Outputs.spec(I).name(), "' has ",
                       std::to_string(Data.size()), " bytes, expected ",
                       std::to_string(Outputs.spec(I).byteSize()));
  }
  for (size_t I = 0; I < Outputs.size(); ++I)
    std::memcpy(Outputs.data(I), Reply.outputs(int(I)).data(),
                Outputs.spec(I).byteSize());
  return Error::success();
}

} // namespace grpcmsg
} // namespace mlbridge

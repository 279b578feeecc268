//===- mlbridge/UserProtoRunner.h - Runner over a user's service -*- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// UserProtoRunner: the runner API over a user's own gRPC service, e.g.
///
///   service InlinerModel { rpc Advise(InlineFeatures) returns (InlineAdvice);
///   }
///
/// Header-only: the user generates code for their .proto in their own build
/// (`mlbridge_generate_grpc` in cmake/MlbridgeProto.cmake) and instantiates
/// this template with their stub and messages; mlbridge is never rebuilt per
/// proto. Inputs map to request fields and outputs to reply fields by name,
/// through protobuf reflection, checked once at creation: a spec with one
/// element maps to a singular field, a larger one to a repeated field;
/// element types map to the field's C++ type (int8/int16 to int32 fields,
/// uint8/uint16 to uint32 or bool fields).
///
/// Errors: a call that fails as a call (deadline exceeded, service
/// unavailable, call cancelled, method unimplemented) is a Timeout,
/// PeerClosed or Protocol error after which the runner is Broken (later
/// calls fail fast, like PipeModelRunner and GrpcModelRunner); any other
/// status the service returns is a ModelFailure (RESOURCE_EXHAUSTED:
/// TooLarge) and the runner stays usable.
///
/// Needs gRPC and protobuf headers (the user has them, having generated
/// their stub); link mlbridge::mlbridge and gRPC::grpc++.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_USERPROTORUNNER_H
#define MLBRIDGE_USERPROTORUNNER_H

#include "mlbridge/ModelRunner.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>
#include <memory>

namespace mlbridge {

namespace userproto {
using google::protobuf::FieldDescriptor;

/// Whether a tensor of \p T can live in a field of C++ type \p C.
inline bool compatible(DType T, FieldDescriptor::CppType C) {
  switch (T) {
  case DType::Float:
    return C == FieldDescriptor::CPPTYPE_FLOAT;
  case DType::Double:
    return C == FieldDescriptor::CPPTYPE_DOUBLE;
  case DType::Int8:
  case DType::Int16:
  case DType::Int32:
    return C == FieldDescriptor::CPPTYPE_INT32;
  case DType::UInt8:
    return C == FieldDescriptor::CPPTYPE_UINT32 ||
           C == FieldDescriptor::CPPTYPE_BOOL;
  case DType::UInt16:
  case DType::UInt32:
    return C == FieldDescriptor::CPPTYPE_UINT32;
  case DType::Int64:
    return C == FieldDescriptor::CPPTYPE_INT64;
  case DType::UInt64:
    return C == FieldDescriptor::CPPTYPE_UINT64;
  }
  return false;
}

/// Finds and checks the field for \p Spec in \p Type.
inline Expected<const FieldDescriptor *>
fieldFor(const google::protobuf::Descriptor *Type, const TensorSpec &Spec) {
  const FieldDescriptor *F = Type->FindFieldByName(Spec.name());
  if (!F)
    return makeError(ErrorCode::InvalidArgument, "message ", Type->full_name(),
                     " has no field '", Spec.name(), "'");
  if (!compatible(Spec.type(), F->cpp_type()))
    return makeError(ErrorCode::TypeMismatch, "field ", F->full_name(), " (",
                     F->cpp_type_name(), ") cannot hold tensor '", Spec.name(),
                     "' of ", dtypeName(Spec.type()));
  if (Spec.elementCount() != 1 && !F->is_repeated())
    return makeError(ErrorCode::TypeMismatch, "tensor '", Spec.name(), "' has ",
                     std::to_string(Spec.elementCount()),
                     " elements but field ", F->full_name(),
                     " is not repeated");
  if (Spec.elementCount() == 1 && F->is_repeated())
    return makeError(ErrorCode::TypeMismatch, "tensor '", Spec.name(),
                     "' is a scalar but field ", F->full_name(),
                     " is repeated (declare shape [N])");
  return F;
}

/// True when a call that ended with \p Code failed as a call (the service was
/// not reached, did not answer in time, or lacks the method), rather than
/// the service reporting an error: later calls would fail the same way.
inline bool isCallFailure(grpc::StatusCode Code) {
  return Code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         Code == grpc::StatusCode::UNAVAILABLE ||
         Code == grpc::StatusCode::CANCELLED ||
         Code == grpc::StatusCode::UNIMPLEMENTED;
}

/// Maps a failed call's status to an Error: Timeout, PeerClosed or Protocol
/// for a call failure (isCallFailure), TooLarge for RESOURCE_EXHAUSTED, and
/// ModelFailure for any other status the service returned.
inline Error statusError(const grpc::Status &S) {
  ErrorCode Code = ErrorCode::ModelFailure;
  switch (S.error_code()) {
  case grpc::StatusCode::DEADLINE_EXCEEDED:
    Code = ErrorCode::Timeout;
    break;
  case grpc::StatusCode::UNAVAILABLE:
  case grpc::StatusCode::CANCELLED:
    Code = ErrorCode::PeerClosed;
    break;
  case grpc::StatusCode::UNIMPLEMENTED:
    Code = ErrorCode::Protocol;
    break;
  case grpc::StatusCode::RESOURCE_EXHAUSTED:
    Code = ErrorCode::TooLarge;
    break;
  default:
    break;
  }
  return makeError(Code, "user service call failed: gRPC status ",
                   std::to_string(int(S.error_code())), ": ",
                   S.error_message());
}

/// Element \p I of a tensor of \p T at \p Data, widened to \p Out.
template <typename Out> Out element(DType T, const void *Data, size_t I) {
  const char *P = static_cast<const char *>(Data) + I * dtypeSize(T);
  switch (T) {
#define MLBRIDGE_ELEMENT(Enum, CType)                                          \
  case DType::Enum: {                                                          \
    CType V;                                                                   \
    std::memcpy(&V, P, sizeof(V));                                             \
    return static_cast<Out>(V);                                                \
  }
    MLBRIDGE_ELEMENT(Float, float)
    MLBRIDGE_ELEMENT(Double, double)
    MLBRIDGE_ELEMENT(Int8, int8_t)
    MLBRIDGE_ELEMENT(UInt8, uint8_t)
    MLBRIDGE_ELEMENT(Int16, int16_t)
    MLBRIDGE_ELEMENT(UInt16, uint16_t)
    MLBRIDGE_ELEMENT(Int32, int32_t)
    MLBRIDGE_ELEMENT(UInt32, uint32_t)
    MLBRIDGE_ELEMENT(Int64, int64_t)
    MLBRIDGE_ELEMENT(UInt64, uint64_t)
#undef MLBRIDGE_ELEMENT
  }
  return Out();
}

/// Stores \p V as element \p I of a tensor of \p T at \p Data; false if the
/// value does not fit the tensor's type.
template <typename In> bool store(DType T, void *Data, size_t I, In V) {
  char *P = static_cast<char *>(Data) + I * dtypeSize(T);
  switch (T) {
#define MLBRIDGE_STORE(Enum, CType)                                            \
  case DType::Enum: {                                                          \
    CType C = static_cast<CType>(V);                                           \
    if (static_cast<In>(C) != V && V == V)                                     \
      return false;                                                            \
    std::memcpy(P, &C, sizeof(C));                                             \
    return true;                                                               \
  }
    MLBRIDGE_STORE(Float, float)
    MLBRIDGE_STORE(Double, double)
    MLBRIDGE_STORE(Int8, int8_t)
    MLBRIDGE_STORE(UInt8, uint8_t)
    MLBRIDGE_STORE(Int16, int16_t)
    MLBRIDGE_STORE(UInt16, uint16_t)
    MLBRIDGE_STORE(Int32, int32_t)
    MLBRIDGE_STORE(UInt32, uint32_t)
    MLBRIDGE_STORE(Int64, int64_t)
    MLBRIDGE_STORE(UInt64, uint64_t)
#undef MLBRIDGE_STORE
  }
  return false;
}
} // namespace userproto

/// A ModelRunner calling the unary method \p Method of a user's service.
template <typename StubT, typename RequestT, typename ReplyT>
class UserProtoRunner final : public ModelRunner {
public:
  /// The generated stub's synchronous unary method, e.g.
  /// `&InlinerModel::Stub::Advise`.
  using Method = grpc::Status (StubT::*)(grpc::ClientContext *,
                                         const RequestT &, ReplyT *);

  /// Makes a runner; checks every spec against the messages' fields.
  static Expected<std::unique_ptr<UserProtoRunner>>
  create(std::shared_ptr<grpc::Channel> Channel, Method Call,
         std::vector<TensorSpec> Inputs, std::vector<TensorSpec> Outputs,
         std::chrono::milliseconds CallTimeout = std::chrono::seconds(10)) {
    std::unique_ptr<UserProtoRunner> R(new UserProtoRunner());
    if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
      return E;
    for (size_t I = 0; I < R->Inputs.size(); ++I) {
      auto F = userproto::fieldFor(RequestT::descriptor(), R->Inputs.spec(I));
      if (!F)
        return F.takeError();
      R->InputFields.push_back(*F);
    }
    for (size_t I = 0; I < R->Outputs.size(); ++I) {
      auto F = userproto::fieldFor(ReplyT::descriptor(), R->Outputs.spec(I));
      if (!F)
        return F.takeError();
      R->OutputFields.push_back(*F);
    }
    R->Stub = std::make_unique<StubT>(Channel);
    R->Call = Call;
    R->CallTimeout = CallTimeout;
    return R;
  }

private:
  UserProtoRunner() = default;

  Error evaluateImpl() override {
    using userproto::element;
    using FD = google::protobuf::FieldDescriptor;
    const google::protobuf::Reflection *Refl = Request.GetReflection();
    for (size_t I = 0; I < Inputs.size(); ++I) {
      const FD *F = InputFields[I];
      const TensorSpec &S = Inputs.spec(I);
      const void *D = Inputs.data(I);
      if (F->is_repeated())
        Refl->ClearField(&Request, F);
      for (size_t K = 0; K < S.elementCount(); ++K) {
        bool Rep = F->is_repeated();
        switch (F->cpp_type()) {
#define MLBRIDGE_SET(Cpp, Setter, Adder, CType)                                \
  case FD::Cpp:                                                                \
    if (Rep)                                                                   \
      Refl->Adder(&Request, F, element<CType>(S.type(), D, K));                \
    else                                                                       \
      Refl->Setter(&Request, F, element<CType>(S.type(), D, K));               \
    break;
          MLBRIDGE_SET(CPPTYPE_FLOAT, SetFloat, AddFloat, float)
          MLBRIDGE_SET(CPPTYPE_DOUBLE, SetDouble, AddDouble, double)
          MLBRIDGE_SET(CPPTYPE_INT32, SetInt32, AddInt32, int32_t)
          MLBRIDGE_SET(CPPTYPE_UINT32, SetUInt32, AddUInt32, uint32_t)
          MLBRIDGE_SET(CPPTYPE_INT64, SetInt64, AddInt64, int64_t)
          MLBRIDGE_SET(CPPTYPE_UINT64, SetUInt64, AddUInt64, uint64_t)
          MLBRIDGE_SET(CPPTYPE_BOOL, SetBool, AddBool, bool)
#undef MLBRIDGE_SET
        default:
          return makeError(ErrorCode::Unsupported, "field type of ",
                           F->full_name());
        }
      }
    }
    grpc::ClientContext Ctx;
    Ctx.set_deadline(std::chrono::system_clock::now() + CallTimeout);
    grpc::Status St = ((*Stub).*Call)(&Ctx, Request, &Reply);
    if (!St.ok()) {
      // Like the other runners: after a failed call (no answer in time, no
      // service) the runner is Broken and fails fast; an error the service
      // itself returns (ModelFailure) leaves it usable.
      Error E = userproto::statusError(St);
      if (userproto::isCallFailure(St.error_code()))
        markBroken(E);
      return E;
    }
    const google::protobuf::Reflection *Out = Reply.GetReflection();
    for (size_t I = 0; I < Outputs.size(); ++I) {
      const FD *F = OutputFields[I];
      const TensorSpec &S = Outputs.spec(I);
      if (F->is_repeated() &&
          size_t(Out->FieldSize(Reply, F)) != S.elementCount())
        return makeError(
            ErrorCode::TypeMismatch, "reply field ", F->full_name(), " has ",
            std::to_string(Out->FieldSize(Reply, F)), " elements, expected ",
            std::to_string(S.elementCount()));
      for (size_t K = 0; K < S.elementCount(); ++K) {
        bool Rep = F->is_repeated();
        int Idx = int(K);
        bool Ok = true;
        switch (F->cpp_type()) {
#define MLBRIDGE_GET(Cpp, Getter, RepGetter)                                   \
  case FD::Cpp:                                                                \
    Ok = userproto::store(S.type(), Outputs.data(I), K,                        \
                          Rep ? Out->RepGetter(Reply, F, Idx)                  \
                              : Out->Getter(Reply, F));                        \
    break;
          MLBRIDGE_GET(CPPTYPE_FLOAT, GetFloat, GetRepeatedFloat)
          MLBRIDGE_GET(CPPTYPE_DOUBLE, GetDouble, GetRepeatedDouble)
          MLBRIDGE_GET(CPPTYPE_INT32, GetInt32, GetRepeatedInt32)
          MLBRIDGE_GET(CPPTYPE_UINT32, GetUInt32, GetRepeatedUInt32)
          MLBRIDGE_GET(CPPTYPE_INT64, GetInt64, GetRepeatedInt64)
          MLBRIDGE_GET(CPPTYPE_UINT64, GetUInt64, GetRepeatedUInt64)
          MLBRIDGE_GET(CPPTYPE_BOOL, GetBool, GetRepeatedBool)
#undef MLBRIDGE_GET
        default:
          return makeError(ErrorCode::Unsupported, "field type of ",
                           F->full_name());
        }
        if (!Ok)
          return makeError(ErrorCode::TypeMismatch, "reply field ",
                           F->full_name(), " holds a value that does not fit ",
                           dtypeName(S.type()));
      }
    }
    return Error::success();
  }

  std::unique_ptr<StubT> Stub;
  Method Call = nullptr;
  std::chrono::milliseconds CallTimeout{10000};
  RequestT Request;
  ReplyT Reply;
  std::vector<const google::protobuf::FieldDescriptor *> InputFields,
      OutputFields;
};

} // namespace mlbridge

#endif // MLBRIDGE_USERPROTORUNNER_H

//===- mlbridge/OnnxModelInfo.h - An ONNX model's interface -----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reads what an ONNX model reads and writes (its graph's inputs and outputs,
/// with element types and shapes) straight from the protobuf file, without
/// ONNX Runtime, and checks it against a runner's TensorSpecs. The onnx
/// runner uses it to refuse a model of other specs before ONNX Runtime is
/// loaded, which lets it defer loading ONNX Runtime to its first evaluation.
///
/// The bytes are untrusted: every length is checked against what remains,
/// nothing is allocated from a declared size, and a malformed file is an
/// InvalidArgument error naming the byte where reading stopped.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_ONNXMODELINFO_H
#define MLBRIDGE_ONNXMODELINFO_H

#include "mlbridge/Error.h"
#include "mlbridge/ModelRunner.h"
#include "mlbridge/TensorSpec.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// One input or output of an ONNX graph, as the model declares it.
struct OnnxValueInfo {
  /// Its name.
  std::string Name;
  /// Whether it is a tensor (not a sequence, map, optional or sparse one).
  bool IsTensor = false;
  /// Its ONNX element type (TensorProto.DataType: 1 float, 7 int64, ...);
  /// 0 when the model does not say.
  int32_t ElementType = 0;
  /// Whether the model declares a shape (else any shape is accepted).
  bool HasShape = false;
  /// The declared dimensions; -1 for a symbolic or unknown one.
  std::vector<int64_t> Dims;
};

/// The interface of an ONNX model.
struct OnnxModelInfo {
  /// The graph inputs a caller feeds (inputs that are also initializers,
  /// i.e. weights with defaults, are left out, as ONNX Runtime does).
  std::vector<OnnxValueInfo> Inputs;
  /// The graph outputs.
  std::vector<OnnxValueInfo> Outputs;
  /// The model's metadata_props whose key starts with "mlbridge." (what the
  /// model claims about itself to mlbridge, ModelRunner::metadata()), in
  /// file order; other keys are not read.
  ModelMetadata Metadata;
};

/// The ONNX element type (TensorProto.DataType) of \p Type.
int32_t onnxElementType(DType Type);

/// The memory readOnnxModelInfo() may take for a model of N bytes:
/// OnnxModelInfoMemoryFactor * N + OnnxModelInfoMemoryBase bytes, counted
/// before each allocation (a model of many empty graph inputs cannot make
/// the reader allocate much more than the model's own size).
inline constexpr size_t OnnxModelInfoMemoryFactor = 8;
/// See OnnxModelInfoMemoryFactor.
inline constexpr size_t OnnxModelInfoMemoryBase = size_t(1) << 20;

/// Reads the interface of the serialized ModelProto in \p Bytes; TooLarge
/// when it would take more memory than OnnxModelInfoMemoryFactor allows.
Expected<OnnxModelInfo> readOnnxModelInfo(std::string_view Bytes);

/// Reads the interface of the ONNX model file at \p Path; a missing or
/// unreadable file is an InvalidArgument error naming it (as ONNX Runtime
/// reports it).
Expected<OnnxModelInfo> readOnnxModelInfoFile(const std::string &Path);

/// Checks \p Model against a runner's specs: every model input must be
/// provided by the input spec of its name, and every output spec must name
/// a model output, each with the spec's element type and element count
/// (symbolic dimensions match any count they divide). \p ModelName names
/// the model in errors. Returns, per input spec, whether the model reads it.
Expected<std::vector<bool>> checkOnnxInterface(
    const OnnxModelInfo &Model, const std::vector<TensorSpec> &Inputs,
    const std::vector<TensorSpec> &Outputs, const std::string &ModelName);

} // namespace mlbridge

#endif // MLBRIDGE_ONNXMODELINFO_H

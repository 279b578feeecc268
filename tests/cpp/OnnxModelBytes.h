//===- OnnxModelBytes.h - ONNX models written in tests ----------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Serialized ONNX models built field by field (onnx.proto's numbers), for
/// tests that need models Python's onnx package would not write: malformed,
/// of unknown operators, with sparse initializers or sequence inputs.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TESTS_ONNXMODELBYTES_H
#define MLBRIDGE_TESTS_ONNXMODELBYTES_H

#include "support/ProtoWire.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlbridge {
namespace test {

/// A ValueInfoProto called \p Name whose TypeProto has field \p TypeField
/// (1 tensor_type, 4 sequence_type, ...) holding \p TypeBody.
inline std::string onnxValue(const std::string &Name, uint32_t TypeField,
                             const std::string &TypeBody) {
  using namespace protowire;
  std::string TypeProto;
  appendBytesField(TypeProto, TypeField, TypeBody);
  std::string V;
  appendBytesField(V, 1, Name);
  appendBytesField(V, 2, TypeProto);
  return V;
}

/// A ValueInfoProto of a tensor: element type \p Type (onnx.proto's), and
/// \p Dims (-1: a symbolic dimension "n"); \p Shaped false: no shape.
inline std::string onnxTensorValue(const std::string &Name, int32_t Type,
                                   const std::vector<int64_t> &Dims,
                                   bool Shaped = true) {
  using namespace protowire;
  std::string Shape;
  for (int64_t D : Dims) {
    std::string Dim;
    if (D < 0)
      appendBytesField(Dim, 2, "n");
    else
      appendVarintField(Dim, 1, uint64_t(D));
    appendBytesField(Shape, 1, Dim);
  }
  std::string Tensor;
  appendVarintField(Tensor, 1, uint64_t(Type));
  if (Shaped)
    appendBytesField(Tensor, 2, Shape);
  return onnxValue(Name, 1, Tensor);
}

/// A ValueInfoProto of a sequence of float tensors.
inline std::string onnxSequenceValue(const std::string &Name) {
  using namespace protowire;
  std::string Tensor;
  appendVarintField(Tensor, 1, 1); // elem_type float
  std::string Elem;                // TypeProto of the elements
  appendBytesField(Elem, 1, Tensor);
  std::string Sequence;
  appendBytesField(Sequence, 1, Elem);
  return onnxValue(Name, 4, Sequence);
}

/// A NodeProto: \p Op of \p Inputs giving \p Outputs.
inline std::string onnxNode(const std::string &Op,
                            const std::vector<std::string> &Inputs,
                            const std::vector<std::string> &Outputs) {
  using namespace protowire;
  std::string N;
  for (const std::string &I : Inputs)
    appendBytesField(N, 1, I);
  for (const std::string &O : Outputs)
    appendBytesField(N, 2, O);
  appendBytesField(N, 4, Op);
  return N;
}

/// A float TensorProto called \p Name holding \p Count zeros.
inline std::string onnxInitializer(const std::string &Name, size_t Count) {
  using namespace protowire;
  std::string T;
  appendVarintField(T, 1, Count); // dims
  appendVarintField(T, 2, 1);     // data_type float
  appendBytesField(T, 8, Name);
  appendBytesField(T, 9, std::string(4 * Count, '\0')); // raw_data
  return T;
}

/// The parts of a graph.
struct OnnxGraphParts {
  /// NodeProtos.
  std::vector<std::string> Nodes;
  /// Input ValueInfoProtos.
  std::vector<std::string> Inputs;
  /// Output ValueInfoProtos.
  std::vector<std::string> Outputs;
  /// TensorProtos.
  std::vector<std::string> Initializers;
  /// TensorProtos of sparse initializers' values (indices left out).
  std::vector<std::string> SparseValues;
};

/// A ModelProto.metadata_props field (14): one StringStringEntryProto, to
/// append to a model.
inline std::string onnxMetadataEntry(const std::string &Key,
                                     const std::string &Value) {
  using namespace protowire;
  std::string Entry, Field;
  appendBytesField(Entry, 1, Key);
  appendBytesField(Entry, 2, Value);
  appendBytesField(Field, 14, Entry);
  return Field;
}

/// A ModelProto (IR version 8, opset 13) of one graph.
inline std::string onnxModel(const OnnxGraphParts &G) {
  using namespace protowire;
  std::string Graph;
  for (const std::string &N : G.Nodes)
    appendBytesField(Graph, 1, N);
  appendBytesField(Graph, 2, "test");
  for (const std::string &T : G.Initializers)
    appendBytesField(Graph, 5, T);
  for (const std::string &I : G.Inputs)
    appendBytesField(Graph, 11, I);
  for (const std::string &O : G.Outputs)
    appendBytesField(Graph, 12, O);
  for (const std::string &V : G.SparseValues) {
    std::string Sparse;
    appendBytesField(Sparse, 1, V);
    appendBytesField(Graph, 15, Sparse);
  }
  std::string Opset;
  appendBytesField(Opset, 1, "");
  appendVarintField(Opset, 2, 13);
  std::string Model;
  appendVarintField(Model, 1, 8);
  appendBytesField(Model, 2, "mlbridge-tests");
  appendBytesField(Model, 7, Graph);
  appendBytesField(Model, 8, Opset);
  return Model;
}

} // namespace test
} // namespace mlbridge

#endif // MLBRIDGE_TESTS_ONNXMODELBYTES_H

//===- mlbridge/TensorSpec.h - Tensor descriptions --------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// DType and TensorSpec, matching LLVM's TensorSpec: a name, one of the ten
/// numeric element types, a row-major shape and a port. Booleans travel as
/// uint8 (0/1); strings are not tensor values (see docs/protocol.md).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TENSORSPEC_H
#define MLBRIDGE_TENSORSPEC_H

#include "mlbridge/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// The ten element types LLVM's TensorSpec supports, in LLVM's order.
enum class DType : uint8_t {
  Float,
  Double,
  Int8,
  UInt8,
  Int16,
  UInt16,
  Int32,
  UInt32,
  Int64,
  UInt64,
};

/// Number of DType values.
inline constexpr int NumDTypes = 10;

/// Size of one element of \p T in bytes.
size_t dtypeSize(DType T);

/// LLVM's name of \p T: "float", "double", "int8_t", ... "uint64_t".
const char *dtypeName(DType T);

/// Parses LLVM's type name ("int64_t", ...) into a DType.
Expected<DType> parseDType(std::string_view Name);

/// Maps a C++ element type to its DType, e.g. `DTypeOf<int64_t>::value`.
template <typename T> struct DTypeOf;
/// \cond
#define MLBRIDGE_DTYPE_OF(CType, Enum)                                         \
  template <> struct DTypeOf<CType> {                                          \
    static constexpr DType value = DType::Enum;                                \
  };
MLBRIDGE_DTYPE_OF(float, Float)
MLBRIDGE_DTYPE_OF(double, Double)
MLBRIDGE_DTYPE_OF(int8_t, Int8)
MLBRIDGE_DTYPE_OF(uint8_t, UInt8)
MLBRIDGE_DTYPE_OF(int16_t, Int16)
MLBRIDGE_DTYPE_OF(uint16_t, UInt16)
MLBRIDGE_DTYPE_OF(int32_t, Int32)
MLBRIDGE_DTYPE_OF(uint32_t, UInt32)
MLBRIDGE_DTYPE_OF(int64_t, Int64)
MLBRIDGE_DTYPE_OF(uint64_t, UInt64)
#undef MLBRIDGE_DTYPE_OF
/// \endcond

/// Largest element count a TensorSpec may describe (bounds every decoder).
inline constexpr uint64_t MaxTensorElements = uint64_t(1) << 40;

/// Most dimensions a TensorSpec may have (docs/protocol.md; the Python side's
/// MAX_RANK).
inline constexpr size_t MaxTensorRank = 32;

/// Describes one tensor: name, element type, row-major shape, port.
class TensorSpec {
public:
  /// Makes a spec; fails (InvalidArgument, naming the tensor and the
  /// problem) on an empty name, a negative dimension, more than MaxTensorRank
  /// dimensions or a shape whose element count exceeds MaxTensorElements.
  static Expected<TensorSpec> create(std::string Name, DType Type,
                                     std::vector<int64_t> Shape, int Port = 0);

  /// Makes a spec for the C++ element type T, e.g.
  /// `TensorSpec::of<int64_t>("callee_users", {1})`, for specs written in
  /// code. What create() would refuse does not fail here but yields a spec
  /// marked invalid (isValid() is false, validationError() says why, it has
  /// no elements) that every runner, TensorBuffers::create and
  /// TrainingLogWriter::create refuse with that error: an invalid shape is
  /// never silently turned into another one.
  template <typename T>
  static TensorSpec of(std::string Name, std::vector<int64_t> Shape = {1},
                       int Port = 0) {
    return TensorSpec(std::move(Name), DTypeOf<T>::value, std::move(Shape),
                      Port);
  }

  /// Parses LLVM's JSON form `{"name":..,"type":..,"port":..,"shape":[..]}`.
  static Expected<TensorSpec> fromJSON(std::string_view Json);

  /// LLVM's JSON form, canonical (keys name, type, port, shape; no spaces).
  std::string toJSON() const;
  /// Appends LLVM's JSON form to \p Out.
  void appendJSON(std::string &Out) const;

  /// The tensor's name.
  const std::string &name() const { return Name; }
  /// The element type.
  DType type() const { return Type; }
  /// The row-major shape (empty for a scalar).
  const std::vector<int64_t> &shape() const { return Shape; }
  /// The port (LLVM's output index for multi-output graphs).
  int port() const { return Port; }
  /// Number of elements: the product of the shape (1 for a scalar, 0 for an
  /// invalid spec).
  size_t elementCount() const { return ElementCount; }
  /// Size of the packed tensor in bytes.
  size_t byteSize() const { return ElementCount * dtypeSize(Type); }
  /// False when the spec was made by of() from an invalid name or shape;
  /// such a spec has no elements and no runner accepts it.
  bool isValid() const { return !Invalid; }
  /// Why the spec is invalid (InvalidArgument, naming the tensor), or
  /// success for a valid spec.
  const Error &validationError() const { return Invalid; }
  /// True when the spec describes elements of C++ type T.
  template <typename T> bool isElementType() const {
    return Type == DTypeOf<T>::value;
  }

  /// Specs are equal when name, type, shape and port are equal.
  bool operator==(const TensorSpec &Other) const;
  /// Negation of operator==.
  bool operator!=(const TensorSpec &Other) const { return !(*this == Other); }

private:
  TensorSpec(std::string Name, DType Type, std::vector<int64_t> Shape,
             int Port);

  std::string Name;
  DType Type;
  std::vector<int64_t> Shape;
  int Port;
  size_t ElementCount;
  Error Invalid;
};

/// Appends \p Specs to \p Out as a JSON array of LLVM's JSON forms.
void appendJSONArray(std::string &Out, const std::vector<TensorSpec> &Specs);

/// Checks that \p Specs have unique, non-empty names.
Error checkUniqueNames(const std::vector<TensorSpec> &Specs, const char *What);

/// Checks that every spec of \p Specs is valid (see TensorSpec::isValid) and
/// that their names are unique; errors start with \p What (e.g. "inputs").
Error checkSpecs(const std::vector<TensorSpec> &Specs, const char *What);

} // namespace mlbridge

#endif // MLBRIDGE_TENSORSPEC_H

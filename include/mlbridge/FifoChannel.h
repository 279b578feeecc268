//===- mlbridge/FifoChannel.h - A private pair of FIFOs ---------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// FifoChannel creates the two FIFOs of a pipe channel, `BASE.in` (model side
/// to compiler) and `BASE.out` (compiler to model side), mode 0600, inside a
/// fresh private directory (mode 0700), and removes them when destroyed.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_FIFOCHANNEL_H
#define MLBRIDGE_FIFOCHANNEL_H

#include "mlbridge/Error.h"

#include <string>

namespace mlbridge {

/// Owns a private directory holding BASE.in and BASE.out.
class FifoChannel {
public:
  /// Makes a private directory under \p ParentDir (default: $TMPDIR or /tmp)
  /// and the two FIFOs in it, named "channel.in" and "channel.out".
  static Expected<FifoChannel> create(const std::string &ParentDir = "");

  FifoChannel(FifoChannel &&Other) noexcept;
  FifoChannel &operator=(FifoChannel &&Other) noexcept;
  FifoChannel(const FifoChannel &) = delete;
  FifoChannel &operator=(const FifoChannel &) = delete;
  /// Removes the FIFOs and the directory.
  ~FifoChannel();

  /// The base path: append ".in" / ".out" for the FIFOs.
  const std::string &base() const { return Base; }
  /// Path of the FIFO the compiler reads (model side writes).
  std::string inPath() const { return Base + ".in"; }
  /// Path of the FIFO the compiler writes (model side reads).
  std::string outPath() const { return Base + ".out"; }

private:
  FifoChannel() = default;
  void remove();

  std::string Directory;
  std::string Base;
};

} // namespace mlbridge

#endif // MLBRIDGE_FIFOCHANNEL_H

//===- support/ReadFile.h - Whole files, bounded ----------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Reading a whole file a user named (a module, a model) without trusting
/// it: only a regular file (a FIFO would block the compiler), opened without
/// blocking, refused before anything is allocated when it is larger than a
/// budget, read to its end across interrupted calls.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_SUPPORT_READFILE_H
#define MLBRIDGE_SRC_SUPPORT_READFILE_H

#include "mlbridge/Error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace mlbridge {

/// The bytes of the regular file \p Path, refused (TooLarge) when it has
/// more than \p MaxBytes. Errors read "cannot load WHAT 'PATH': why", e.g.
/// WHAT "module": IO when it cannot be opened, is not a regular file, fails
/// to read or grows while it is read.
Expected<std::string> readRegularFile(const std::string &Path,
                                      uint64_t MaxBytes, std::string_view What);

} // namespace mlbridge

#endif // MLBRIDGE_SRC_SUPPORT_READFILE_H

//===- support/OutputFile.h - Opening a log or statistics file --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Opening a file a user named for output (a decision log, statistics, a
/// training log) without trusting what is at that path: a symbolic link is
/// not followed (it could point at any file the user can write), a FIFO or
/// device is not waited on (opening a FIFO without a reader would block the
/// compiler), and anything but a regular file is refused.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_SUPPORT_OUTPUTFILE_H
#define MLBRIDGE_SRC_SUPPORT_OUTPUTFILE_H

#include "mlbridge/Error.h"

#include <string>
#include <string_view>

namespace mlbridge {

/// A descriptor of the regular file \p Path opened for writing with
/// \p Flags (O_APPEND, O_TRUNC...; O_WRONLY | O_CREAT | O_CLOEXEC always,
/// mode 0644 when created), blocking as usual once open; the caller closes
/// it. IO error "cannot open WHAT 'PATH': why" when \p Path is a symbolic
/// link, a FIFO, a directory or any other non-regular file, or cannot be
/// opened.
Expected<int> openOutputFile(const std::string &Path, int Flags,
                             std::string_view What);

/// Replaces the contents of the regular file \p Path (opened as
/// openOutputFile opens it) with \p Text. IO error "cannot open WHAT
/// 'PATH': why" or "cannot write WHAT 'PATH': why".
Error writeOutputFile(const std::string &Path, std::string_view Text,
                      std::string_view What);

} // namespace mlbridge

#endif // MLBRIDGE_SRC_SUPPORT_OUTPUTFILE_H

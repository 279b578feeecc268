//===- gcc/LoopAnalysis.h - Reading a GCC loop's features -------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The GCC side of LoopFeatures: reads them off a loop of the current
/// function, which must be in SSA form with loop structures and scalar
/// evolutions initialised (GCC's loop pipeline). Only GCC's side-effect-free
/// queries are used, so that a plugin that asks and then keeps GCC's
/// decision produces the very object plain GCC does.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_GCC_LOOPANALYSIS_H
#define MLBRIDGE_SRC_GCC_LOOPANALYSIS_H

#include "LoopFeatures.h"

class loop;

namespace mlbridge {
namespace gccplugin {

/// The features of \p L.
LoopFeatures readLoopFeatures(class loop *L);

} // namespace gccplugin
} // namespace mlbridge

#endif // MLBRIDGE_SRC_GCC_LOOPANALYSIS_H

//===- gcc/LoopFeatures.cpp - What a model sees of a GCC loop -------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "LoopFeatures.h"

namespace mlbridge {
namespace gccplugin {

const char *const LoopFeatureNames[NumLoopFeatures] = {
    "loop_depth",     "is_innermost",    "num_blocks",   "num_insns",
    "num_statements", "num_exits",       "num_calls",    "num_loads",
    "num_stores",     "num_float_ops",   "num_branches", "trip_count",
    "max_trip_count", "estimated_trips",
};

const char *const UnrollFactorName = "unroll_factor";

} // namespace gccplugin
} // namespace mlbridge

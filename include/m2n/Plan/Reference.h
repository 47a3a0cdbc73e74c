//===- Reference.h - Executing a plan element by element --------*- C++ -*-===//
//
// A slow, obviously correct executor for tests: it fills every rank's source
// shards with values that encode (tensor, global element), runs the plan's
// local copies and messages step by step on byte buffers, and checks that
// every destination shard ends up holding exactly the right elements.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PLAN_REFERENCE_H
#define M2N_PLAN_REFERENCE_H

#include "m2n/Plan/Plan.h"

#include <string>

namespace m2n::plan {

/// Runs a fused and scheduled plan and returns the first mismatch found, or
/// an empty string when every destination element is right. Meant for small
/// plans: it keeps every shard of every rank in memory.
std::string runReference(const Plan &plan);

} // namespace m2n::plan

#endif // M2N_PLAN_REFERENCE_H

//===- Verify.h - Checking a plan -------------------------------*- C++ -*-===//

#ifndef M2N_PLAN_VERIFY_H
#define M2N_PLAN_VERIFY_H

#include "m2n/Plan/Plan.h"

#include <string>
#include <vector>

namespace m2n::plan {

/// Checks a plan and returns what is wrong (empty when it is sound):
/// - every slice lies within the tensor; a local copy's box lies within the
///   rank's source box; a Source slice's box within the sender's source box;
/// - every destination byte of every member is written exactly once: the
///   slices received by each destination rank tile its destination box;
/// - a Destination (relay) slice forwards bytes that the sender received in
///   an earlier round, and lies within the sender's destination box;
/// - once fused: every remote slice of every member travels in exactly one
///   message, between its sender and receiver, and local copies in none;
///   message bytes equal the sum of their parts; a zero-copy message has one
///   part, contiguous in both buffers;
/// - once scheduled: steps are in [0, numSteps); a relay slice travels in a
///   later step than every slice that brought its bytes; each rank's staging
///   bytes in each step (packed sends plus unpacked receives, zero-copy
///   excluded) stay within stagingBudget; messages are sorted;
/// - numSteps is at most the number of messages (or 1 without any).
/// At most `maxProblems` problems are listed, each naming the tensor (or
/// group), ranks, box and step concerned.
std::vector<std::string> verifyPlan(const Plan &plan, size_t maxProblems = 10);

/// verifyPlan for a plan about to be exported, which must be complete:
/// checked as fused even without messages (so every remote slice must
/// travel in one), and scheduled when it has messages. A plan of an earlier
/// stage passes verifyPlan but not this.
std::vector<std::string> verifyCompiledPlan(const Plan &plan,
                                            size_t maxProblems = 10);

} // namespace m2n::plan

#endif // M2N_PLAN_VERIFY_H

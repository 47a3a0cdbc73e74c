//===- SliceRoots.h - Where forwarded bytes left the source side -*- C++ -*-===//
//
// A forward carries bytes that its sender received in an earlier round; its
// root is the source-side rank that first sent them. Fuse orders the slices
// of a pair by root, so that a forward's bytes come in few messages from the
// source side, and the schedule can pass each one on as soon as the message
// that brought it has arrived.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_LIB_PLAN_SLICEROOTS_H
#define M2N_LIB_PLAN_SLICEROOTS_H

#include "m2n/Plan/Plan.h"

#include <cstdint>
#include <vector>

namespace m2n::plan {

/// Per group, the root of each of its slices: its sender for bytes read from
/// a source shard, else the root of an earlier slice that brought bytes of
/// its box to its sender (the lowest, where several did). A forward whose
/// bytes reached its sender in no earlier slice (a plan from bad IR, which
/// the verifier refuses) has its sender as root. A group that forwards
/// nothing has no entries: its roots are its senders.
std::vector<std::vector<int64_t>> sliceRoots(const Plan &plan);

/// The root of slice `s` of group `g` in `roots`.
inline int64_t rootOf(const std::vector<std::vector<int64_t>> &roots,
                      const Plan &plan, size_t g, size_t s) {
  return roots[g].empty() ? plan.groups[g].slices[s].sender : roots[g][s];
}

} // namespace m2n::plan

#endif // M2N_LIB_PLAN_SLICEROOTS_H

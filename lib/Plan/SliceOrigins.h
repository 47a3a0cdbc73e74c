//===- SliceOrigins.h - Where forwarded bytes came from ---------*- C++ -*-===//
//
// A forward carries bytes that its sender received in an earlier round: its
// input is the slice that brought them, and its root is the source-side rank
// that first sent them. Fuse orders the slices of a pair by root, and packs
// each forward with the bytes of one message that brought them, so that a
// forward waits on few of the messages before it and the schedule can pass
// each one on as soon as the message that brought it has arrived.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_LIB_PLAN_SLICEORIGINS_H
#define M2N_LIB_PLAN_SLICEORIGINS_H

#include "m2n/Plan/Plan.h"

#include <cstdint>
#include <vector>

namespace m2n::plan {

/// Where the slices of one group came from. A group that forwards nothing
/// has no entries: its roots are its senders and it has no inputs.
struct GroupOrigins {
  /// Per slice, its root: its sender for bytes read from a source shard,
  /// else the root of its input.
  std::vector<int64_t> roots;
  /// Per slice, its input: of the earlier slices that brought bytes of its
  /// box to its sender, the one of the lowest root (the first of those);
  /// -1 for bytes read from a source shard, and for a forward whose bytes
  /// reached its sender in no earlier slice (a plan from bad IR, which the
  /// verifier refuses).
  std::vector<int32_t> inputs;

  bool forwards() const { return !roots.empty(); }
};

/// The origins of every group's slices.
std::vector<GroupOrigins> sliceOrigins(const Plan &plan);

/// The root of slice `s` of group `g`.
inline int64_t rootOf(const std::vector<GroupOrigins> &origins,
                      const Plan &plan, size_t g, size_t s) {
  return origins[g].forwards() ? origins[g].roots[s]
                               : plan.groups[g].slices[s].sender;
}

/// The input of slice `s` of group `g`, or -1.
inline int32_t inputOf(const std::vector<GroupOrigins> &origins, size_t g,
                       size_t s) {
  return origins[g].forwards() ? origins[g].inputs[s] : -1;
}

} // namespace m2n::plan

#endif // M2N_LIB_PLAN_SLICEORIGINS_H

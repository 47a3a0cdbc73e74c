//===- Decompose.h - Reshards into slice transfers --------------*- C++ -*-===//

#ifndef M2N_PLAN_DECOMPOSE_H
#define M2N_PLAN_DECOMPOSE_H

#include "m2n/Plan/Parallel.h"
#include "m2n/Plan/Plan.h"

namespace m2n::plan {

struct DecomposeStats {
  /// Slices that cross between ranks, and their bytes; both count each
  /// member of a group, so a slice of a group of 3 tensors counts 3 times.
  int64_t remoteSlices = 0;
  int64_t wireBytes = 0;
  /// Slices copied within a rank, and their bytes, counted the same way.
  int64_t localCopies = 0;
  int64_t localBytes = 0;
};

/// Fills every group's slices: for each destination rank and each region of
/// its destination box, exactly one slice. A region the rank already holds in
/// its source shard becomes a local copy; every other region is sent by one
/// rank that holds it (the first holder in source mesh order; balance()
/// chooses better). Regions are the intersections of the destination box
/// with the distinct source boxes, which are disjoint, so no byte reaches a
/// rank twice. Replaces any slices the groups had.
/// Gives every group its slices; groups are decomposed on `pool` when
/// there is one (see forEachGroup).
DecomposeStats decompose(Plan &plan, llvm::ThreadPoolInterface *pool = nullptr);

} // namespace m2n::plan

#endif // M2N_PLAN_DECOMPOSE_H

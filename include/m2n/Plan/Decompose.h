//===- Decompose.h - Reshards into slice transfers --------------*- C++ -*-===//

#ifndef M2N_PLAN_DECOMPOSE_H
#define M2N_PLAN_DECOMPOSE_H

#include "m2n/Plan/Parallel.h"
#include "m2n/Plan/Plan.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

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

struct DecomposeOptions {
  /// Whether each region of a destination box that several ranks hold is
  /// one fan-out slice (Slice::isFanOut) instead of a slice per holder:
  /// with many replicas, most of a plan's slices before relay() are those.
  bool fanOut = false;
  /// Where groups are decomposed at once (see forEachGroup).
  llvm::ThreadPoolInterface *pool = nullptr;
};

/// Fills every group's slices: for each destination rank and each region of
/// its destination box, exactly one slice. A region the rank already holds in
/// its source shard becomes a local copy; every other region is sent by one
/// rank that holds it (the first holder in source mesh order; balance()
/// chooses better). Regions are the intersections of the destination box
/// with the distinct source boxes, which are disjoint, so no byte reaches a
/// rank twice. Replaces any slices the groups had. The stats count the
/// slices that fan-out slices stand for.
DecomposeStats decompose(Plan &plan, const DecomposeOptions &options = {});

/// Whether a group, or any group of a plan, has fan-out slices.
bool hasFanOuts(const TransferGroup &group);
bool hasFanOuts(const Plan &plan);

/// Replaces the fan-out slices of `group` (a group of `plan`) for which
/// `which` holds by the slices they stand for, and sorts the slices. A
/// fan-out slice whose box lies in no destination box (only malformed IR
/// has one) stands for nothing that could be said: it stays, and the
/// result is false.
bool expandFanOuts(TransferGroup &group, const Plan &plan,
                   llvm::function_ref<bool(const Slice &)> which);
/// Replaces every fan-out slice of `plan` by the slices it stands for, on
/// `pool` where there is one: every pass but balance() and relay() needs a
/// receiver for each slice. Returns "" or what kept a slice from expanding.
std::string expandFanOuts(Plan &plan,
                          llvm::ThreadPoolInterface *pool = nullptr);

} // namespace m2n::plan

#endif // M2N_PLAN_DECOMPOSE_H

//===- Parallel.h - Working on a plan's groups at once ----------*- C++ -*-===//
//
// Much of a pass's work is per group of tensors and independent of the other
// groups, and a schedule tries candidates independent of each other: those
// parts run on the thread pool of the pass's MLIR context,
// when it has one (and threading is on), and in order on the calling thread
// otherwise. Results are the same either way.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_PLAN_PARALLEL_H
#define M2N_PLAN_PARALLEL_H

#include "m2n/Plan/Plan.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace llvm {
class ThreadPoolInterface;
} // namespace llvm

namespace m2n::plan {

/// Calls `fn(i)` once for every i in [0, count), on `pool`'s threads and
/// the calling thread, lower i taken first, or in order on the calling
/// thread when `pool` is null. Calls may run at once: `fn(i)` must write
/// only what belongs to i.
void forEachIndex(size_t count, llvm::ThreadPoolInterface *pool,
                  llvm::function_ref<void(size_t)> fn);

/// Calls `fn(g)` once for every group index g of `plan`, on `pool`'s threads
/// and the calling thread, or in order on the calling thread when `pool` is
/// null. The groups with the most slices go first, so that a large one does
/// not end last. Calls for different groups may run at once: `fn` must
/// write only what belongs to its group.
void forEachGroup(const Plan &plan, llvm::ThreadPoolInterface *pool,
                  llvm::function_ref<void(size_t)> fn);

} // namespace m2n::plan

#endif // M2N_PLAN_PARALLEL_H

//===- Coalesce.h - Merging adjacent slices; strided runs -------*- C++ -*-===//

#ifndef M2N_PLAN_COALESCE_H
#define M2N_PLAN_COALESCE_H

#include "m2n/Plan/Parallel.h"
#include "m2n/Plan/Plan.h"

#include "llvm/ADT/SmallVector.h"

namespace m2n::plan {

struct CoalesceStats {
  int64_t slicesBefore = 0;
  int64_t slicesAfter = 0;
};

/// Merges slices of a group with the same sender, receiver, origin and round
/// whose boxes are adjacent along one dimension and equal in all others, so
/// that their union is one box, repeatedly until none merge. Such a union is
/// adjacent in memory on both sides whenever the parts were.
CoalesceStats coalesce(Plan &plan, llvm::ThreadPoolInterface *pool = nullptr);

/// The boxes of a tensor of `shape`, merged as coalesce merges slices: boxes
/// adjacent along one dimension and equal in all others become one, until
/// none merge. Empty boxes are kept as they are, at the end.
std::vector<Box> mergeBoxes(std::vector<Box> boxes,
                            const std::vector<int64_t> &shape);

/// A slice of a row-major buffer as strided runs: `count[i]` repetitions at
/// `stride[i]` bytes for each outer level i (outermost first), of one
/// contiguous run of `runBytes` at byte `offset` of the buffer. Dimensions
/// that are whole in the buffer fold into the run, and unit dimensions
/// vanish, so the description has the fewest levels.
struct StridedRuns {
  int64_t offset = 0;
  int64_t runBytes = 0;
  // Inline storage: the exporter describes a slice per message part.
  llvm::SmallVector<int64_t, 4> count;
  llvm::SmallVector<int64_t, 4> stride;

  /// The number of contiguous runs.
  int64_t runs() const;
  bool contiguous() const { return count.empty(); }
};

/// `slice` (global coordinates) within a buffer holding `buffer` (global
/// coordinates, row-major), elements of `elementBytes`. The slice must lie
/// within the buffer.
StridedRuns stridedRuns(const Box &slice, const Box &buffer,
                        int64_t elementBytes);

/// Describes `slice` in both buffers with the same levels, as a pack or
/// unpack walks them together: a dimension folds into the run only when it
/// folds in both.
std::pair<StridedRuns, StridedRuns> stridedRunsPair(const Box &slice,
                                                    const Box &from,
                                                    const Box &to,
                                                    int64_t elementBytes);

} // namespace m2n::plan

#endif // M2N_PLAN_COALESCE_H
